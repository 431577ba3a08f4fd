/* A fault at an exact point of an MPI program, for the tests of how a job
 * ends when one rank stops or dies (tests/probe/test_probe_ends.sh,
 * tests/scan/test_scan_ends.sh).
 *
 * Why it exists: the hardest moments to end a job well are brief and sit
 * between two messages (a rank that stops just before its last report,
 * just before taking the verdict, the coordinator just before the stop
 * orders). A signal sent from outside lands there only by luck, and a test
 * hook in the programs would be code that runs in production for tests'
 * sake. MPI's profiling interface gives the point without either: this
 * library, put in front of libmpi with LD_PRELOAD, defines the MPI calls
 * the programs send and receive their messages with and hands each on to
 * its PMPI_ twin, except the one call it was told to stop at.
 *
 * Configured by the environment (mpirun -x NAME=VALUE):
 *   FB_FAULT_RANK    the world rank that faults (unset: the library only
 *                    passes calls on)
 *   FB_FAULT_CALL    isend | irecv | send | recv
 *   FB_FAULT_TAG     the message tag the call must carry
 *   FB_FAULT_NTH     the Nth call of that rank matching CALL and TAG,
 *                    counted from 1
 *   FB_FAULT_ACTION  stop: raise(SIGSTOP) before the call is handed on;
 *                    kill: raise(SIGKILL) instead of it;
 *                    count: no fault, FB_FAULT_FILE holds the number of
 *                    matching calls so far (a test learns which call is a
 *                    program's last from an undisturbed run)
 *   FB_FAULT_FILE    stop, kill: written just before the fault, with the
 *                    process id and the wall-clock time ("PID SECONDS"),
 *                    so a test times the end from the fault itself;
 *                    count: the count
 * A setting that is malformed ends the process with a line on stderr: a
 * test that asked for a fault must never run without one unnoticed. */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum fault_call { CALL_ISEND, CALL_IRECV, CALL_SEND, CALL_RECV };
enum fault_action { ACT_STOP, ACT_KILL, ACT_COUNT };

struct fault {
    int armed; /* this rank faults */
    enum fault_call call;
    int tag;
    long nth;
    enum fault_action action;
    const char *file;
    long seen; /* matching calls so far */
};

static _Noreturn void refuse(const char *name, const char *value, const char *want)
{
    fprintf(stderr, "mpi_fault: %s=%s: give %s\n", name, value ? value : "(unset)", want);
    _exit(2);
}

static int pick(const char *name, const char *const *words, int n, const char *want)
{
    const char *v = getenv(name);
    for (int i = 0; v != NULL && i < n; i++)
        if (strcmp(v, words[i]) == 0)
            return i;
    refuse(name, v, want);
}

static long number(const char *name, long min)
{
    const char *v = getenv(name);
    char *end = NULL;
    errno = 0;
    long x = v != NULL ? strtol(v, &end, 10) : 0;
    if (v == NULL || *v == '\0' || *end != '\0' || errno != 0 || x < min)
        refuse(name, v, min > 0 ? "a whole number from 1" : "a whole number from 0");
    return x;
}

/* Read at the first call, after MPI_Init: the rank is known then. */
static struct fault *fault_config(void)
{
    static struct fault f;
    static int loaded;
    if (loaded)
        return &f;
    loaded = 1;
    if (getenv("FB_FAULT_RANK") == NULL)
        return &f;
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    static const char *const calls[] = {"isend", "irecv", "send", "recv"};
    static const char *const actions[] = {"stop", "kill", "count"};
    f.call = (enum fault_call)pick("FB_FAULT_CALL", calls, 4, "isend, irecv, send or recv");
    f.tag = (int)number("FB_FAULT_TAG", 0);
    f.action = (enum fault_action)pick("FB_FAULT_ACTION", actions, 3, "stop, kill or count");
    f.nth = f.action == ACT_COUNT ? 0 : number("FB_FAULT_NTH", 1);
    f.file = getenv("FB_FAULT_FILE");
    if (f.file == NULL || f.file[0] == '\0')
        refuse("FB_FAULT_FILE", f.file, "the file the fault or the count is written to");
    f.armed = rank == number("FB_FAULT_RANK", 0);
    return &f;
}

/* The whole text at once, through a temporary renamed over the file: a
 * reader never sees half of it. */
static void put_file(const char *path, const char *text)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    if (n == (ssize_t)strlen(text))
        rename(tmp, path);
    else
        unlink(tmp);
}

static void before(enum fault_call call, int tag)
{
    struct fault *f = fault_config();
    if (!f->armed || f->call != call || f->tag != tag)
        return;
    char text[64];
    f->seen++;
    if (f->action == ACT_COUNT) {
        snprintf(text, sizeof text, "%ld\n", f->seen);
        put_file(f->file, text);
        return;
    }
    if (f->seen != f->nth)
        return;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(text, sizeof text, "%ld %ld.%09ld\n", (long)getpid(), (long)now.tv_sec, now.tv_nsec);
    put_file(f->file, text);
    raise(f->action == ACT_KILL ? SIGKILL : SIGSTOP);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    before(CALL_ISEND, tag);
    return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    before(CALL_IRECV, tag);
    return PMPI_Irecv(buf, count, type, source, tag, comm, req);
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    before(CALL_SEND, tag);
    return PMPI_Send(buf, count, type, dest, tag, comm);
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    before(CALL_RECV, tag);
    return PMPI_Recv(buf, count, type, source, tag, comm, status);
}
