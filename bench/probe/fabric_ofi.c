/* Which libfabric provider and domain a rank measures with. fi_getinfo is
 * asked for reliable datagram endpoints (FI_EP_RDM, what aws-ofi-nccl
 * uses) with RMA, under every memory-registration mode the probe can
 * honour; when nothing matches, looser questions find out why, so the
 * error names what is missing rather than "no data". */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text.h"
#include "probe/devsel.h"
#include "probe/ofi_internal.h"

/* 1.9 brought FI_HMEM and fi_mr_attr.iface; newer providers still answer it. */
#define PROBE_FI_VERSION FI_VERSION(1, 9)
#define DOMAINS_MAX 64

/* Modes the probe can serve: it registers every buffer, passes local
 * descriptors, sends virtual or zero-based addresses and the provider's
 * keys, binds regions to endpoints, and gives every operation a context. */
#define MR_MODES \
    (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT)

static const struct {
    uint64_t bit;
    const char *name;
} mr_bits[] = {
    {FI_MR_LOCAL, "FI_MR_LOCAL"},         {FI_MR_RAW, "FI_MR_RAW"},
    {FI_MR_VIRT_ADDR, "FI_MR_VIRT_ADDR"}, {FI_MR_ALLOCATED, "FI_MR_ALLOCATED"},
    {FI_MR_PROV_KEY, "FI_MR_PROV_KEY"},   {FI_MR_MMU_NOTIFY, "FI_MR_MMU_NOTIFY"},
    {FI_MR_RMA_EVENT, "FI_MR_RMA_EVENT"}, {FI_MR_ENDPOINT, "FI_MR_ENDPOINT"},
    {FI_MR_HMEM, "FI_MR_HMEM"},
};

void probe_ofi_mr_mode_name(uint64_t mode, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof mr_bits / sizeof mr_bits[0]; i++)
        if (mode & mr_bits[i].bit)
            fb_strbuf_append(buf, len, &used, "%s%s", used ? "|" : "", mr_bits[i].name);
    if (used == 0)
        fb_strbuf_append(buf, len, &used, "none");
}

/* What one question to fi_getinfo includes. */
struct ask {
    int rdm, rma, hmem;
};

static uint64_t rma_caps(int op_read)
{
    return FI_RMA | (op_read ? FI_READ | FI_REMOTE_READ : FI_WRITE | FI_REMOTE_WRITE);
}

static int getinfo(const struct probe_ofi_cfg *cfg, struct ask a, struct fi_info **list)
{
    struct fi_info *hints = fi_allocinfo();
    if (hints == NULL)
        return -FI_ENOMEM;
    if (a.rdm)
        hints->ep_attr->type = FI_EP_RDM;
    if (a.rma) {
        hints->caps = rma_caps(cfg->op_read) | (a.hmem ? FI_HMEM : 0);
        hints->mode = FI_CONTEXT | FI_CONTEXT2;
        hints->domain_attr->mr_mode = MR_MODES | (a.hmem ? FI_MR_HMEM : 0);
        /* One thread drives a rank's domain: the provider may leave its
         * locks out, as it does for fi_rma_bw. */
        hints->domain_attr->threading = FI_THREAD_DOMAIN;
    }
    if (cfg->provider != NULL)
        hints->fabric_attr->prov_name = strdup(cfg->provider);
    *list = NULL;
    int rc = fi_getinfo(PROBE_FI_VERSION, NULL, NULL, 0, hints, list);
    fi_freeinfo(hints);
    return rc;
}

/* 1 when `name` is an item of the ", " list in buf. */
static int named(const char *buf, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = buf; (p = strstr(p, name)) != NULL; p += n)
        if ((p == buf || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

/* "efa, shm, tcp": the providers libfabric loaded (rma: those that would
 * answer the probe's question, whatever --provider says). */
static void provider_names(const struct probe_ofi_cfg *cfg, int rma, char *buf, size_t len)
{
    struct probe_ofi_cfg any = *cfg;
    any.provider = NULL;
    struct fi_info *all = NULL;
    size_t used = 0;
    buf[0] = '\0';
    if (getinfo(&any, (struct ask){rma, rma, rma && cfg->use_cuda}, &all) == 0) {
        for (const struct fi_info *i = all; i != NULL; i = i->next) {
            const char *p = i->fabric_attr->prov_name;
            if (!named(buf, p))
                fb_strbuf_append(buf, len, &used, "%s%s", used ? ", " : "", p);
        }
    }
    fi_freeinfo(all);
    if (used == 0)
        fb_strbuf_append(buf, len, &used, "none");
}

static const char *op_name(const struct probe_ofi_cfg *cfg)
{
    return cfg->op_read ? "read" : "write";
}

/* No provider at all: libfabric lacks the one named, or FI_PROVIDER
 * filtered every provider out before the probe could ask. */
static enum fb_status explain_no_provider(const struct probe_ofi_cfg *cfg, struct fb_err *err)
{
    char names[512];
    provider_names(cfg, 0, names, sizeof names);
    unsigned major = FI_MAJOR(fi_version()), minor = FI_MINOR(fi_version());
    if (cfg->provider != NULL)
        return fb_fail(err, FB_ERR_UNAVAIL,
                       "libfabric %u.%u has no provider '%s' on this host (it has: %s); install "
                       "that provider (EFA: the AWS EFA installer) or pick one with --provider",
                       major, minor, cfg->provider, names);
    return fb_fail(err, FB_ERR_UNAVAIL,
                   "libfabric %u.%u loads no provider FI_PROVIDER=%s allows on this host; install "
                   "that provider (EFA: the AWS EFA installer, its libfabric first on "
                   "LD_LIBRARY_PATH) or change FI_PROVIDER (fi_info lists what there is)",
                   major, minor, cfg->fi_provider);
}

static int has_fi_provider(const struct probe_ofi_cfg *cfg)
{
    return cfg->fi_provider != NULL && cfg->fi_provider[0] != '\0';
}

/* The full question found nothing: ask looser ones to say why. */
static enum fb_status explain_no_match(const struct probe_ofi_cfg *cfg, int rc, struct fb_err *err)
{
    char names[512];
    struct fi_info *l = NULL;
    if (rc != -FI_ENODATA)
        return fb_fail(err, FB_ERR_UNAVAIL, "fi_getinfo failed: %s (%d)", fi_strerror(-rc), rc);
    if ((cfg->provider != NULL || has_fi_provider(cfg)) && getinfo(cfg, (struct ask){0, 0, 0}, &l) != 0)
        return explain_no_provider(cfg, err);
    fi_freeinfo(l);
    if (cfg->use_cuda && getinfo(cfg, (struct ask){1, 1, 0}, &l) == 0) {
        char prov[64];
        snprintf(prov, sizeof prov, "%s", l->fabric_attr->prov_name);
        fi_freeinfo(l);
        return fb_fail(err, FB_ERR_UNAVAIL,
                       "provider %s does not report FI_HMEM, which --use-cuda needs to register "
                       "GPU memory (GPUDirect RDMA); use a provider built with CUDA support (efa "
                       "is) or drop --use-cuda", prov);
    }
    char who[96];
    if (cfg->provider != NULL)
        snprintf(who, sizeof who, "%s", cfg->provider);
    else if (has_fi_provider(cfg))
        snprintf(who, sizeof who, "FI_PROVIDER=%.80s", cfg->fi_provider);
    else
        snprintf(who, sizeof who, "any provider");
    provider_names(cfg, 1, names, sizeof names);
    return fb_fail(err, FB_ERR_UNAVAIL,
                   "%s offers no FI_EP_RDM endpoint with FI_RMA %s here (those that do: %s); pick "
                   "one that does with --provider (efa, verbs;ofi_rxm, tcp)%s",
                   who, op_name(cfg), names,
                   cfg->op_read ? "" : ", or try --op read where only reads are offered");
}

static int is_loopback(const struct fi_info *i)
{
    if (i->src_addr == NULL)
        return 0;
    if (i->addr_format == FI_SOCKADDR_IN && i->src_addrlen >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *s = i->src_addr;
        return (ntohl(s->sin_addr.s_addr) >> 24) == 127;
    }
    if (i->addr_format == FI_SOCKADDR_IN6 && i->src_addrlen >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *s = i->src_addr;
        return IN6_IS_ADDR_LOOPBACK(&s->sin6_addr);
    }
    return 0;
}

/* The provider of the run: the one asked for, else libfabric's first
 * choice, passing over shared memory when the job spans hosts. */
static const struct fi_info *first_usable(const struct fi_info *list, int multi_node)
{
    for (const struct fi_info *i = list; i != NULL; i = i->next)
        if (!multi_node || strcmp(i->fabric_attr->prov_name, "shm") != 0)
            return i;
    return NULL;
}

/* The provider's domains in libfabric's order, one entry each (the first
 * of its fabrics, usually IPv4 first for socket providers); loopback ones
 * only when asked for by name or when nothing else is there. */
static int list_domains(const struct fi_info *list, const char *prov, int named_ok,
                        const struct fi_info **out, int cap)
{
    int n = 0;
    for (int pass = named_ok ? 1 : 0; pass < 2 && n == 0; pass++) {
        for (const struct fi_info *i = list; i != NULL && n < cap; i = i->next) {
            if (strcmp(i->fabric_attr->prov_name, prov) != 0 || (pass == 0 && is_loopback(i)))
                continue;
            int seen = 0;
            for (int k = 0; k < n && !seen; k++)
                seen = strcmp(out[k]->domain_attr->name, i->domain_attr->name) == 0;
            if (!seen)
                out[n++] = i;
        }
    }
    return n;
}

static enum fb_status pick_domain(const struct probe_ofi_cfg *cfg, const struct fi_info *list,
                                  int local_rank, int local_size, const char *host,
                                  struct fi_info **chosen, struct fb_err *err)
{
    const struct fi_info *first = first_usable(list, cfg->multi_node);
    if (first == NULL)
        return fb_fail(err, FB_ERR_UNAVAIL, "only shm offers RMA here and the job spans hosts; "
                       "pick a network provider with --provider (efa, verbs;ofi_rxm, tcp)");
    const struct fi_info *doms[DOMAINS_MAX];
    const char *names[DOMAINS_MAX] = {0};
    int n = list_domains(list, first->fabric_attr->prov_name, cfg->domains != NULL, doms,
                         DOMAINS_MAX);
    for (int k = 0; k < n; k++)
        names[k] = doms[k]->domain_attr->name;
    char want[64];
    if (probe_pick_device(names, n, cfg->domains, local_rank, local_size, "libfabric domain",
                          "-d", host, want, sizeof want, err) != FB_OK)
        return err->code;
    for (int k = 0; k < n; k++) {
        if (strcmp(names[k], want) == 0) {
            *chosen = fi_dupinfo(doms[k]);
            return *chosen != NULL ? FB_OK : fb_fail(err, FB_ERR_INTERNAL, "out of memory");
        }
    }
    return fb_fail(err, FB_ERR_INTERNAL, "domain %s vanished from the list", want);
}

static void describe_address(const struct fi_info *i, char *buf, size_t len)
{
    buf[0] = '\0';
    if (i->src_addr == NULL)
        return;
    if (i->addr_format == FI_SOCKADDR_IN)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)i->src_addr)->sin_addr, buf, (socklen_t)len);
    else if (i->addr_format == FI_SOCKADDR_IN6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)i->src_addr)->sin6_addr, buf,
                  (socklen_t)len);
}

/* What the NIC says of itself, where the provider describes one (efa, cxi,
 * verbs do; socket providers do not, and the line rate stays unknown, so
 * links are judged against their median). */
static void describe_nic(const struct fid_nic *nic, struct probe_endpoint *ep)
{
    if (nic == NULL)
        return;
    if (nic->device_attr != NULL && nic->device_attr->firmware != NULL)
        snprintf(ep->firmware, sizeof ep->firmware, "%s", nic->device_attr->firmware);
    if (nic->bus_attr != NULL && nic->bus_attr->bus_type == FI_BUS_PCI) {
        const struct fi_pci_attr *p = &nic->bus_attr->attr.pci;
        snprintf(ep->pci_bus_id, sizeof ep->pci_bus_id, "%04x:%02x:%02x.%x", p->domain_id,
                 p->bus_id, p->device_id, p->function_id);
    }
    const struct fi_link_attr *l = nic->link_attr;
    if (l == NULL)
        return;
    if (l->speed > 0) {
        ep->line_rate_gbps = (double)l->speed / 1e9;
        snprintf(ep->rate, sizeof ep->rate, "%.0f Gb/s", ep->line_rate_gbps);
    }
    if (l->mtu > 0)
        ep->mtu = (int)l->mtu;
    if (l->network_type != NULL)
        snprintf(ep->link_layer, sizeof ep->link_layer, "%s", l->network_type);
    snprintf(ep->port_state, sizeof ep->port_state, "%s",
             l->state == FI_LINK_UP ? "UP" : l->state == FI_LINK_DOWN ? "DOWN" : "UNKNOWN");
}

static void describe(const struct probe_ofi_dev *d, struct probe_endpoint *ep)
{
    const struct fi_info *i = d->info;
    snprintf(ep->device, sizeof ep->device, "%s", d->name);
    snprintf(ep->provider, sizeof ep->provider, "%s", d->provider);
    snprintf(ep->provider_version, sizeof ep->provider_version, "%u.%u",
             FI_MAJOR(i->fabric_attr->prov_version), FI_MINOR(i->fabric_attr->prov_version));
    snprintf(ep->fabric, sizeof ep->fabric, "%s", i->fabric_attr->name);
    snprintf(ep->ep_type, sizeof ep->ep_type, "FI_EP_RDM");
    probe_ofi_mr_mode_name(d->mr_mode, ep->mr_mode, sizeof ep->mr_mode);
    snprintf(ep->libfabric, sizeof ep->libfabric, "%u.%u", FI_MAJOR(fi_version()),
             FI_MINOR(fi_version()));
    describe_address(i, ep->address, sizeof ep->address);
    describe_nic(i->nic, ep);
}

static enum fb_status check_limits(const struct probe_ofi_cfg *cfg, struct probe_ofi_dev *d,
                                   struct fb_err *err)
{
    const struct fi_info *i = d->info;
    if (i->ep_attr->max_msg_size > 0 && cfg->max_size > i->ep_attr->max_msg_size)
        return fb_fail(err, FB_ERR_USAGE, "%llu-byte messages exceed provider %s's largest (%zu "
                       "bytes); lower -s/--max-size", (unsigned long long)cfg->max_size,
                       d->provider, i->ep_attr->max_msg_size);
    if (i->domain_attr->mr_key_size > sizeof(uint64_t))
        return fb_fail(err, FB_ERR_UNAVAIL, "provider %s uses %zu-byte memory keys; the probe "
                       "sends 8-byte keys", d->provider, i->domain_attr->mr_key_size);
    size_t depth = (size_t)cfg->tx_depth;
    if (i->tx_attr->size > 0 && depth > i->tx_attr->size)
        depth = i->tx_attr->size; /* the provider's queue is the window's ceiling */
    d->window = depth;
    return FB_OK;
}

enum fb_status probe_ofi_open(const struct probe_ofi_cfg *cfg, int local_rank, int local_size,
                              const char *host, struct probe_ofi_dev **out,
                              struct probe_endpoint *ep, struct fb_err *err)
{
    struct probe_ofi_dev *d = calloc(1, sizeof *d);
    if (d == NULL)
        return fb_fail(err, FB_ERR_INTERNAL, "out of memory");
    *out = d;
    d->op_read = cfg->op_read;
    d->counter = cfg->counter;
    d->hmem_iface = FI_HMEM_SYSTEM;
    d->gpu = -1;
    struct fi_info *list = NULL;
    int rc = getinfo(cfg, (struct ask){1, 1, cfg->use_cuda}, &list);
    if (rc != 0)
        return explain_no_match(cfg, rc, err);
    enum fb_status st = pick_domain(cfg, list, local_rank, local_size, host, &d->info, err);
    fi_freeinfo(list);
    if (st != FB_OK)
        return st;
    snprintf(d->name, sizeof d->name, "%s", d->info->domain_attr->name);
    snprintf(d->provider, sizeof d->provider, "%s", d->info->fabric_attr->prov_name);
    d->mr_mode = d->info->domain_attr->mr_mode;
    if (check_limits(cfg, d, err) != FB_OK)
        return err->code;
    if ((rc = fi_fabric(d->info->fabric_attr, &d->fabric, NULL)) != 0 ||
        (rc = fi_domain(d->fabric, d->info, &d->domain, NULL)) != 0)
        return fb_fail(err, FB_ERR_UNAVAIL, "opening %s domain %s failed: %s (%d)", d->provider,
                       d->name, fi_strerror(-rc), rc);
    describe(d, ep);
    return FB_OK;
}

void probe_ofi_close(struct probe_ofi_dev *d)
{
    if (d == NULL)
        return;
    if (d->domain != NULL)
        fi_close(&d->domain->fid);
    if (d->fabric != NULL)
        fi_close(&d->fabric->fid);
    fi_freeinfo(d->info);
    free(d);
}
