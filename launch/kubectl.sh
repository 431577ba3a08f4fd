#!/usr/bin/env bash
# Runs a fabric-bench sweep across the worker pods of manifests/ with
# `kubectl exec`, copies the result into results/<cluster>/ and prints
# fabric-report's verdict.
#
#   launch/kubectl.sh keygen [-n NS]       per-job ssh key into Secret fabric-bench-ssh
#   launch/kubectl.sh [options] [--] COLLECTIVE [fabric-coll options]
#   launch/kubectl.sh --from KIND/NAME|--from-file FILE [options] [--] COLLECTIVE ...
#                                          workers derived from a training job's wiring
#   launch/kubectl.sh derive --from KIND/NAME|--from-file FILE [-o yaml|json]
#                                          print the derived workers, apply nothing
#   launch/kubectl.sh --launcher env --fabric F [--workload job|jobset|pytorchjob]
#                     [options] [--] COLLECTIVE [fabric-coll options]
#                                          the env launch: applies the fabric's
#                                          Indexed Job, JobSet or PyTorchJob (no
#                                          sshd, no mpirun), waits, copies rank
#                                          0's result back; see "Env launch" below
#   launch/kubectl.sh scan [options] [-- fabric-scan options]
#                                          a fleet scan (fabric-scan) over the
#                                          workers, one per node; see "Scan" below
#   launch/kubectl.sh probe [options] [-- fabric-rdma options]
#                                          a link probe (fabric-rdma) across the
#                                          workers; see "Probe" below
#
#   -n, --namespace NS    namespace of the pods (default fabric-bench)
#   -l, --selector SEL    worker pods (default app.kubernetes.io/name=fabric-bench,
#                         app.kubernetes.io/component=worker)
#   -c, --container NAME  container that runs MPI (default fabric-bench)
#   --pods N              wait for N pods (default: those that exist, at least 2)
#   --wait S              bound on waiting for every container Ready (default 600)
#   --ssh-wait S          bound on waiting for ssh between pods (default 60)
#   --fabric NAME         environment profile (default: the pods' fabric-bench/fabric
#                         annotation); the pods' own environment is kept as well
#   --env KEY=VALUE       more environment (repeatable)
#   --cluster NAME        results/<NAME>/ (default $FABRIC_CLUSTER, else the
#                         kubectl context)
#   --results DIR         local results directory (default results)
#   --ranks-per-node N    ranks per pod (default: the pod's nvidia.com/gpu limit, else 1)
#   --bind numa|core|none CPU binding of each rank (default numa)
#   --ssh-port N, --ssh-key FILE, --rsh CMD
#                         how pods reach each other (default port 222 and the key
#                         pod-sshd.sh installs at /run/fabric-bench/ssh/id)
#   --pod-root DIR        fabric-bench inside the pods (default /opt/fabric-bench)
#   --pod-bin DIR         its programs (default POD_ROOT/bin)
#   --workdir DIR         directory inside the first pod in which each run makes
#                         its own with mktemp -d (default the pod's $TMPDIR, else /tmp)
#   --iface NAME          interface for MPI's own traffic (default eth0)
#   --mpirun-arg ARG      extra mpirun argument (repeatable)
#   --profile NAME        reference profile for the verdict (default: the one
#                         fabric-report picks from GPU model, nodes and network)
#   --profiles DIR        more reference profiles (fabric-report check --profiles)
#   --kubectl CMD         kubectl to use (default $KUBECTL, else kubectl)
#   --dry-run             print every command and generated script, run nothing
#                         (pods are assumed to be fabric-bench-0..N-1; with --from
#                         the artifact is read and the derived manifest printed)
#   --no-capacity-check   do not check for two free GPU nodes before waiting
#
# Under the delivered wiring (docs/clusters.md, "Benchmark under the
# delivered wiring"): a StatefulSet fabric-bench-from-<name> of --pods pods
# (default 2) copies the artifact's pod template and replaces only the
# worker container's image, command, args, probes and resources.
#   --from KIND/NAME      ClusterTrainingRuntime, TrainingRuntime, JobSet,
#                         PyTorchJob, MPIJob, Deployment, StatefulSet, Job,
#                         CronJob, ReplicaSet, DaemonSet or Pod (any case, short
#                         and plural names), read with kubectl get -n NS
#   --from-file FILE      the artifact from a JSON or YAML file, at most 4 MiB
#   --from-job NAME       the replicated job of a runtime or JobSet (default node,
#                         else the only one)
#   --image IMAGE         the worker's image (default manifests/base's)
#   --cpu Q, --memory Q   the worker's requests and limits (default 16, 64Gi)
#   --keep                leave the StatefulSet and Service after the run
#   --yes                 apply derived workers that grant privilege (listed
#                         first, always): host namespaces, hostPath volumes,
#                         privileged containers, capabilities beyond the
#                         runtime's defaults and IPC_LOCK, root, another
#                         service account (docs/clusters.md); without it such
#                         a run stops before it applies anything (exit 2)
#   --gpu-nics FILE       the GPU NIC Networks by interface (the gpu-nics.yaml
#                         ConfigMap of overlays/gke-tcpxo): exit 12 unless the
#                         artifact's networking.gke.io/interfaces agrees
#   --networks LIST       the Multus networks (comma-separated): exit 12 unless the
#                         artifact's k8s.v1.cni.cncf.io/networks agrees
#   -o, --output FMT      derive's format: yaml (default) or json
#
# Env launch (docs/clusters.md, "The env launch"): --pods pods (default 2),
# one process of the job each, with the pod's GPUs (-g, unless the
# collective's options give -g or -t; --ranks-per-node overrides); a new
# Secret fabric-bench-job for the watchdog per run; the workload and the
# Secret are deleted at exit unless --keep. With --from or --from-file the
# derived pod template runs as an Indexed Job instead of the overlay.
#   --launcher mpi|env    mpi (default): mpirun over ssh between the pods
#   --workload KIND       job (manifests/envjob, default), jobset
#                         (manifests/jobset) or pytorchjob
#                         (manifests/pytorchjob/overlays-env)
#   --deadline S          the job's activeDeadlineSeconds and the bound on
#                         waiting for rank 0 once every pod started (default 7200)
#   --master-port N       NCCL's bootstrap port (default 29500)
#   --wait S              here: the bound on every pod starting
# Exit as below; 8 also when a pod did not start within --wait (named, with
# the fix) or rank 0 did not end within --deadline; a run that wrote no
# result exits with rank 0's code (fabric-coll's 6: set-up did not complete,
# its line quoted).
#
# Scan (docs/kubernetes-scan.md): fabric-scan over the selected workers,
# one pod per node, each rank told its node (FABRIC_NODE_NAME, the pod's
# spec.nodeName); the results document goes to results/<cluster>/<stamp>-scan.json.
#   --mode fast|exhaustive  fabric-scan's --mode (default fast)
#   --pool LABEL=VALUE    only the workers on nodes with that label (e.g.
#                         cloud.google.com/gke-nodepool=a3-pool)
#   --rack-label KEY      the node label that names a node's rack, read from
#                         kubectl get nodes -o json (fabric-scan --topology;
#                         default topology.kubernetes.io/zone); every scanned
#                         node must carry it
#   --no-racks            no racks: every node in one
#
# Probe (docs/probe.md): fabric-rdma across the workers, --ranks-per-node
# ranks per pod (one per HCA or libfabric domain: local rank l probes the
# l-th). The transport is the fabric profile's FABRIC_PROBE_TRANSPORT
# (aws-efa: ofi, with the profile's FI_PROVIDER=efa; tcp-baseline: tcp),
# else fabric-rdma's default (rdma), unless fabric-rdma's own --transport
# follows the --. The result goes to results/<cluster>/<stamp>-probe.json and
# fabric-report check judges it (PASS, DEGRADED naming the slow links,
# INCOMPLETE); a probe that wrote nothing exits with fabric-rdma's code
# (5: the provider or device is not there, 8: a silent peer).
# It exits with fabric-scan's code, read from its results (mpirun, told to
# go on past a rank's exit, exits 0 whatever the ranks did): 0 no suspects,
# 24 suspects named (also when a lost node ended the run in MPI_Abort),
# else mpirun's own code, or a launch error as below; 11 when fewer than
# two workers are on nodes of the pool.
#
# Option values and the collective's arguments may not hold control
# characters; --cluster is a label (letters, digits, '.', '_', '-'; not '.'
# or '..'), as is FABRIC_CLUSTER; the kubectl context as the default label
# has other characters made '_', '.' and '..' become '_.' and '_..'
# (docs/clusters.md).
#
# Exit: fabric-report's verdict (0 PASS, 20 DEGRADED, 21 TCP-FALLBACK, 22 FAIL,
# 23 INCOMPLETE; its 2 or 10 for an unknown --profile or a malformed result),
# or a launch error (docs/exit-codes.md): 2 a bad option or value, or
# derived workers that grant privilege without --yes, 5 no kubectl or jq, 6
# a pod's host name does not resolve or ssh between pods fails, 8 the pods
# not Ready within --wait, or the API server or the name service not
# answering in time, 9 kubectl get pods, exec or cp failed, or the run wrote
# no result (exit 0), 10 a pod list with bad pod or host names, a malformed
# fabric.env, or a local results directory that cannot be made, or an
# artifact (--from, --from-file) that is missing, over 4 MiB or has no pod
# template, 11 skipped: fewer than two free GPU nodes, 12 the artifact's
# wiring differs from --gpu-nics or --networks. A run that wrote no result
# exits with the run's code when that is not 0 (a rank's: fabric-coll's
# 1-9, 130 or 143, rank.sh's 10; or mpirun's or kubectl exec's own); with no
# fabric-report here or in the pod, the run's code.
set -uo pipefail
# The FB_* variables configure lib.sh's script generators.
# shellcheck disable=SC2034
FB_PROG=kubectl.sh
# shellcheck source=launch/lib.sh
. "$(dirname "$0")/lib.sh"

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

ns="fabric-bench"
selector=app.kubernetes.io/name=fabric-bench,app.kubernetes.io/component=worker
container="fabric-bench" want_pods="" wait_s=600 ssh_wait=60 slots="" ssh_port=222
ssh_key=/run/fabric-bench/ssh/id rsh="" pod_root=/opt/fabric-bench pod_bin="" workdir=""
read -r -a kubectl <<<"${KUBECTL:-kubectl}"
FB_OPT_FABRIC="" # empty: the pods' annotation
from="" from_file="" from_job="" image="" cpu=16 memory=64Gi keep=0 yes=0 gpu_nics="" networks=""
networks_given=0 capacity_check=1 output=yaml
scan_mode=fast pool="" rack_label=topology.kubernetes.io/zone racks=1
workload=job deadline_s=7200 master_port=29500 container_given=0

# shellcheck disable=SC2317 # called by fb_parse_options
kubectl_option() {
  FB_TAKEN=2
  case $1 in
    -n | --namespace) fb_need_arg "$@"; ns=$2 ;;
    -l | --selector) fb_need_arg "$@"; selector=$2 ;;
    -c | --container) fb_need_arg "$@"; container=$2 container_given=1 ;;
    --pods) fb_need_arg "$@"; want_pods=$2 ;;
    --wait) fb_need_arg "$@"; wait_s=$2 ;;
    --ssh-wait) fb_need_arg "$@"; ssh_wait=$2 ;;
    --ranks-per-node) fb_need_arg "$@"; slots=$2 ;;
    --ssh-port) fb_need_arg "$@"; ssh_port=$2 ;;
    --ssh-key) fb_need_arg "$@"; ssh_key=$2 ;;
    --rsh) fb_need_arg "$@"; rsh=$2 ;;
    --pod-root) fb_need_arg "$@"; pod_root=$2 ;;
    --pod-bin) fb_need_arg "$@"; pod_bin=$2 ;;
    --workdir) fb_need_arg "$@"; workdir=$2 ;;
    --kubectl) fb_need_arg "$@"; read -r -a kubectl <<<"$2" ;;
    --from) fb_need_arg "$@"; from=$2 ;;
    --from-file) fb_need_arg "$@"; from_file=$2 ;;
    --from-job) fb_need_arg "$@"; from_job=$2 ;;
    --image) fb_need_arg "$@"; image=$2 ;;
    --cpu) fb_need_arg "$@"; cpu=$2 ;;
    --memory) fb_need_arg "$@"; memory=$2 ;;
    --gpu-nics) fb_need_arg "$@"; gpu_nics=$2 ;;
    --networks) fb_need_arg "$@"; networks=$2 networks_given=1 ;;
    -o | --output) fb_need_arg "$@"; output=$2 ;;
    --mode) fb_need_arg "$@"; scan_mode=$2 ;;
    --pool) fb_need_arg "$@"; pool=$2 ;;
    --rack-label) fb_need_arg "$@"; rack_label=$2 ;;
    --no-racks) racks=0 FB_TAKEN=1 ;;
    --keep) keep=1 FB_TAKEN=1 ;;
    --yes) yes=1 FB_TAKEN=1 ;;
    --no-capacity-check) capacity_check=0 FB_TAKEN=1 ;;
    --workload) fb_need_arg "$@"; workload=$2 ;;
    --deadline) fb_need_arg "$@"; deadline_s=$2 ;;
    --master-port) fb_need_arg "$@"; master_port=$2 ;;
    *) FB_TAKEN=0 ;;
  esac
}
fb_parse_options kubectl_option "$@"
set -- "${FB_REST[@]+"${FB_REST[@]}"}"
subcommand=""
if [ "${1:-}" = derive ]; then
  subcommand=derive
  fb_parse_options kubectl_option "${@:2}"
  set -- "${FB_REST[@]+"${FB_REST[@]}"}"
  [ $# -eq 0 ] || fb_die "$FB_EXIT_USAGE" "derive takes options only, got $(fb_shown "$1"): e.g. launch/kubectl.sh derive --from clustertrainingruntime/NAME"
elif [ "${1:-}" = scan ]; then
  # fabric-scan's own options follow a "--".
  subcommand=scan
  fb_parse_options kubectl_option "${@:2}"
  set -- "${FB_REST[@]+"${FB_REST[@]}"}"
elif [ "${1:-}" = probe ]; then
  # fabric-rdma's own options follow a "--".
  subcommand=probe
  fb_parse_options kubectl_option "${@:2}"
  set -- "${FB_REST[@]+"${FB_REST[@]}"}"
fi

k() { "${kubectl[@]}" "$@"; }
kx() { fb_do "${kubectl[@]}" "$@"; }

# ---- keygen: one key per job, only ever in a Secret ------------------------------
if [ "${1:-}" = keygen ]; then
  fb_need ssh-keygen "install openssh-client"
  tmp=""
  fb_mktemp tmp -d
  fb_do ssh-keygen -q -t ed25519 -N '' -C "fabric-bench job key" -f "$tmp/id" >/dev/null ||
    fb_die "$FB_EXIT_RUNTIME" "ssh-keygen failed"
  if [ "$FB_DRY_RUN" = 1 ]; then
    echo "+ $(fb_quote "${kubectl[@]}" -n "$ns" create secret generic fabric-bench-ssh --type=kubernetes.io/ssh-auth \
      --from-file=ssh-privatekey="$tmp/id" --from-file=ssh-publickey="$tmp/id.pub" --dry-run=client -o yaml) | $(fb_quote "${kubectl[@]}" apply -f -)"
    exit 0
  fi
  k -n "$ns" create secret generic fabric-bench-ssh --type=kubernetes.io/ssh-auth \
    --from-file=ssh-privatekey="$tmp/id" --from-file=ssh-publickey="$tmp/id.pub" --dry-run=client -o yaml |
    k apply -f - >/dev/null ||
    fb_die "$FB_EXIT_RUNTIME" "could not store the key in Secret $ns/fabric-bench-ssh: does namespace $ns exist (kubectl apply -k manifests/overlays/<fabric> creates it)?"
  fb_info "new ssh key in Secret $ns/fabric-bench-ssh; restart the workers to pick it up (kubectl -n $ns delete pods -l $selector)"
  exit 0
fi

# ---- under the delivered wiring: workers derived from an artifact ------------------
# --from KIND/NAME: the kind and the resource kubectl reads it as, and
# whether it is cluster-scoped. Any case, plural and short names, and a
# trailing .group are taken.
from_resource() {
  local k=${1,,}
  k=${k%%.*}
  case $k in
    clustertrainingruntime | clustertrainingruntimes | ctr) echo "ClusterTrainingRuntime clustertrainingruntimes.trainer.kubeflow.org cluster" ;;
    trainingruntime | trainingruntimes | tr) echo "TrainingRuntime trainingruntimes.trainer.kubeflow.org ns" ;;
    jobset | jobsets | js) echo "JobSet jobsets.jobset.x-k8s.io ns" ;;
    pytorchjob | pytorchjobs) echo "PyTorchJob pytorchjobs.kubeflow.org ns" ;;
    mpijob | mpijobs) echo "MPIJob mpijobs.kubeflow.org ns" ;;
    deployment | deployments | deploy) echo "Deployment deployments.apps ns" ;;
    statefulset | statefulsets | sts) echo "StatefulSet statefulsets.apps ns" ;;
    replicaset | replicasets | rs) echo "ReplicaSet replicasets.apps ns" ;;
    daemonset | daemonsets | ds) echo "DaemonSet daemonsets.apps ns" ;;
    job | jobs) echo "Job jobs.batch ns" ;;
    cronjob | cronjobs | cj) echo "CronJob cronjobs.batch ns" ;;
    pod | pods | po) echo "Pod pods ns" ;;
    *) return 1 ;;
  esac
}

# jq_failure FILE: jq's error(...) message without jq's prefix, on one line.
jq_failure() { sed -n '1{s/^jq: error ([^)]*): //;s/^jq: error: //;p}' "$1" | tr -d '\r' | cut -c1-400; }

# artifact_from_cluster KIND/NAME FILE: the object as kubectl get prints it.
artifact_from_cluster() {
  local spec=$1 out=$2 kind name res scope
  [[ $spec == */* ]] ||
    fb_die "$FB_EXIT_USAGE" "--from wants KIND/NAME (e.g. clustertrainingruntime/torch-distributed), got $(fb_shown "$spec")"
  name=${spec#*/}
  local found
  found=$(from_resource "${spec%%/*}") ||
    fb_die "$FB_EXIT_USAGE" "--from $(fb_shown "$spec"): unknown kind $(fb_shown "${spec%%/*}"); use clustertrainingruntime, trainingruntime, jobset, pytorchjob, mpijob, deployment, statefulset, replicaset, daemonset, job, cronjob or pod"
  read -r kind res scope <<<"$found"
  [[ $name =~ ^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$ ]] ||
    fb_die "$FB_EXIT_USAGE" "--from $(fb_shown "$spec"): $(fb_shown "$name") is not a Kubernetes object name (lower-case letters, digits, '-' and '.')"
  local where=(-n "$ns") place="in namespace $ns"
  [ "$scope" = cluster ] && where=() place="(cluster-scoped)"
  timeout -k 2 30 "${kubectl[@]}" "${where[@]}" get "$res" "$name" -o json >"$out" 2>"$FB_LAUNCH_ERR"
  case $? in
    0) ;;
    124 | 137) fb_die "$FB_EXIT_TIMEOUT" "kubectl get $res $name did not answer within 30s: check the API server (kubectl cluster-info)" ;;
    *)
      if grep -q 'NotFound\|not found' "$FB_LAUNCH_ERR"; then
        fb_die "$FB_EXIT_INPUT" "$kind $name not found $place: check the name (kubectl get $res${where[*]:+ ${where[*]}}) and -n"
      elif grep -q "doesn't have a resource type" "$FB_LAUNCH_ERR"; then
        fb_die "$FB_EXIT_INPUT" "the cluster has no $res: install its CRD (Kubeflow Trainer, JobSet, the training operator) or give --from-file"
      fi
      fb_die "$FB_EXIT_RUNTIME" "kubectl get $res $name failed ($(head -c 200 "$FB_LAUNCH_ERR" | tr '\n' ' ')): check the context and access $place" ;;
  esac
  check_size "$out" "$kind $name, as kubectl get returned it,"
  jq -e --arg k "$kind" '.kind == $k' "$out" >/dev/null 2>&1 ||
    fb_die "$FB_EXIT_RUNTIME" "kubectl get $res $name returned something that is not a $kind"
}

# An artifact is one object: the API server keeps none over 1.5 MiB (etcd's
# request limit), so 4 MiB leaves room for a YAML file's comments and
# indentation and still stops a wrong file before anything reads it whole.
ARTIFACT_MAX_BYTES=$((4 * 1024 * 1024))

# check_size FILE WHAT: exit 10, naming WHAT, when FILE is over
# ARTIFACT_MAX_BYTES, told by its size alone, before anything reads it.
check_size() {
  local size
  size=$(stat -L -c %s -- "$1" 2>/dev/null) || fb_die "$FB_EXIT_INPUT" "$2 is not a readable file: check the path"
  [ "$size" -le "$ARTIFACT_MAX_BYTES" ] ||
    fb_die "$FB_EXIT_INPUT" "$2 is $size bytes, over the 4 MiB an artifact may be (one Kubernetes object is at most 1.5 MiB): give the one object's manifest"
}

# to_json FILE OUT WHAT: a JSON or YAML object as JSON, converted by kubectl
# itself (offline); a List of one object is that object.
to_json() {
  if [ ! -f "$1" ] || [ ! -r "$1" ]; then
    fb_die "$FB_EXIT_INPUT" "$3 $(fb_shown "$1") is not a readable file: check the path"
  fi
  check_size "$1" "$3 $(fb_shown "$1")"
  "${kubectl[@]}" patch --local -f "$1" --type merge -p '{}' -o json >"$2.raw" 2>"$FB_LAUNCH_ERR" ||
    fb_die "$FB_EXIT_INPUT" "$3 $(fb_shown "$1") is not a Kubernetes object in JSON or YAML ($(head -c 200 "$FB_LAUNCH_ERR" | tr '\n' ' ')): give one object with apiVersion, kind and metadata.name"
  jq -s 'if length == 1 and .[0].kind == "List" then .[0].items else . end
         | if length == 1 then .[0] else error("holds \(length) objects") end' "$2.raw" >"$2" 2>"$FB_LAUNCH_ERR" ||
    fb_die "$FB_EXIT_INPUT" "$3 $(fb_shown "$1") $(jq_failure "$FB_LAUNCH_ERR"): give exactly one object"
  rm -f "$2.raw"
}

# The image manifests/base runs (its kustomization's images: entry).
base_image() {
  awk '$1 == "newName:" { n = $2 } $1 == "newTag:" { gsub(/"/, "", $2); t = $2 }
       END { if (n != "") print n (t != "" ? ":" t : "") }' "$FB_LAUNCH_ROOT/manifests/base/kustomization.yaml"
}

# derive_jq MODE FILE: launch/derive.jq over the artifact.
derive_jq() {
  jq --arg mode "$1" --arg job "$from_job" --arg container "$container" --arg name "${sts_name:-}" \
    --arg instance "${instance:-}" --arg ns "$ns" --arg source "${runtime_annotation:-}" --arg image "$image" \
    --arg command "$pod_root/launch/pod-sshd.sh" --arg cpu "$cpu" --arg memory "$memory" --arg gpus "${worker_gpus:-}" \
    --argjson port "$ssh_port" --argjson replicas "${want_pods:-2}" -f "$FB_LAUNCH_ROOT/launch/derive.jq" "$2"
}

# worker_name NAME: fabric-bench-from-NAME as a StatefulSet name whose pods'
# names and revision labels fit (52 characters): '.' becomes '-', a longer
# name is cut and given a hash of the whole.
worker_name() {
  local n=fabric-bench-from-${1//./-} h
  if [ ${#n} -gt 52 ]; then
    h=$(printf '%s' "$1" | md5sum | cut -c1-6)
    n=${n:0:45}
    n=${n%-}-$h
  fi
  printf '%s\n' "$n"
}

# check_wiring INFO: the artifact's wiring against --gpu-nics and --networks;
# a difference exits 12 and is never repaired.
check_wiring() {
  local info=$1 nics msg
  if [ -n "$gpu_nics" ]; then
    fb_mktemp nics
    to_json "$gpu_nics" "$nics" --gpu-nics
    # shellcheck disable=SC2016 # a jq program
    msg=$(jq -r --slurpfile cm "$nics" --arg file "$gpu_nics" '
      ($cm[0].data // {}) as $want
      | "\(.kind)/\(.name)" as $what
      | if .interfaces == null then
          "the delivered wiring (\($what)) has no networking.gke.io/interfaces annotation, --gpu-nics \($file) maps \($want | keys | join(", "))"
        else
          ((.interfaces | fromjson? // null) | if type == "array" then map({key: .interfaceName, value: .network}) | from_entries else null end) as $have
          | if $have == null then "the delivered wiring (\($what)) has a networking.gke.io/interfaces annotation that is not a JSON list of {interfaceName, network}"
            else ([($want | keys[]) as $i | select($have[$i] != $want[$i])
                    | "interface \($i) is on network \($have[$i] // "(none: not in the annotation)") in the delivered wiring (\($what)), on \($want[$i]) in --gpu-nics \($file)"]
                  + [($have | keys[]) as $i | select($i != "eth0" and $want[$i] == null)
                    | "interface \($i) is on network \($have[$i]) in the delivered wiring (\($what)), absent from --gpu-nics \($file)"])[0] // empty
            end
        end' "$info") || fb_die "$FB_EXIT_INPUT" "--gpu-nics $(fb_shown "$gpu_nics") is not a ConfigMap with data ethN: NETWORK"
    [ -z "$msg" ] || fb_die "$FB_EXIT_MISMATCH" "mismatch: $msg: the delivered wiring is not repaired; fix the artifact or the file"
  fi
  if [ "$networks_given" = 1 ]; then
    # shellcheck disable=SC2016 # a jq program
    msg=$(jq -r --arg want "$networks" --arg ns "$ns" '
      # Each name in the pod'"'"'s namespace unless it names one; repeats are
      # kept (each one is an interface), the order is not.
      def qualified: if test("/") then . else $ns + "/" + . end;
      def names: if type == "array" then map((if .namespace then .namespace + "/" else "" end) + .name)
                 else split(",") | map(gsub("^\\s+|\\s+$"; "") | sub("@.*$"; "")) end
                 | map(select(. != "") | qualified) | sort;
      ((.networks // "") | if test("^\\s*\\[") then (fromjson? // ["(not JSON)"]) else . end | names) as $have
      | ($want | names) as $w
      | if $have == $w then empty
        else "the delivered wiring (\(.kind)/\(.name)) attaches the networks \(if $have == [] then "(none)" else $have | join(",") end) (k8s.v1.cni.cncf.io/networks), --networks says \(if $w == [] then "(none)" else $w | join(",") end)" end' "$info")
    [ -z "$msg" ] || fb_die "$FB_EXIT_MISMATCH" "mismatch: $msg: the delivered wiring is not repaired; fix the artifact or --networks"
  fi
}

# derive_workers: reads the artifact and sets the derived manifest (file
# $manifest), the StatefulSet's name, the selector of its pods, the worker
# container and the runtime source.
derive_workers() {
  [ -z "$from" ] || [ -z "$from_file" ] || fb_die "$FB_EXIT_USAGE" "--from and --from-file both name the artifact: give one of them"
  [ -z "$from_job" ] || [[ $from_job =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ ]] ||
    fb_die "$FB_EXIT_USAGE" "--from-job wants a replicated job's name (lower-case letters, digits and '-'), got $(fb_shown "$from_job")"
  local q='^[0-9]+(\.[0-9]+)?(m|k|Ki|M|Mi|G|Gi|T|Ti|P|Pi|E|Ei)?$'
  [[ $cpu =~ $q ]] || fb_die "$FB_EXIT_USAGE" "--cpu wants a Kubernetes quantity (16, 15500m), got $(fb_shown "$cpu")"
  [[ $memory =~ $q ]] || fb_die "$FB_EXIT_USAGE" "--memory wants a Kubernetes quantity (64Gi), got $(fb_shown "$memory")"
  image=${image:-$(base_image)}
  fb_check_word --image "$image"
  [ -n "$image" ] || fb_die "$FB_EXIT_INPUT" "no image in manifests/base/kustomization.yaml: pass --image"
  fb_check_port --ssh-port "$ssh_port"
  [ -z "$want_pods" ] || fb_check_uint --pods "$want_pods"
  [ -z "$slots" ] || fb_check_uint --ranks-per-node "$slots"
  local art info
  fb_mktemp art
  fb_mktemp info
  if [ -n "$from" ]; then artifact_from_cluster "$from" "$art"; else to_json "$from_file" "$art" --from-file; fi
  derive_jq info "$art" >"$info" 2>"$FB_LAUNCH_ERR" ||
    fb_die "$FB_EXIT_INPUT" "${from:-$from_file}: $(jq_failure "$FB_LAUNCH_ERR")"
  local kind name src_ns gen gpus
  IFS=$'\x1f' read -r kind name src_ns gen container gpus < <(jq -r '[.kind, .name, .namespace, .generation, .container, (.gpus | tostring)] | map(gsub("[\u0000-\u001f\u007f]"; " ")) | join("\u001f")' "$info")
  [[ $name =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] || fb_die "$FB_EXIT_INPUT" "${from:-$from_file} has no valid metadata.name: give the object its name"
  [[ $gen =~ ^([0-9]+|-)$ ]] || gen=-
  [ "$kind" = ClusterTrainingRuntime ] && src_ns=""
  [ "$kind" = ClusterTrainingRuntime ] || src_ns=${src_ns:-$ns}
  check_wiring "$info"
  worker_gpus=${slots:-}
  [ -n "$worker_gpus" ] || { [ "${gpus%%.*}" -gt 0 ] 2>/dev/null && worker_gpus=${gpus%%.*}; }
  # Trainer v2 runtimes leave the GPUs to each TrainJob (resourcesPerNode):
  # a worker without GPUs would measure nothing of the fabric.
  [ -n "$worker_gpus" ] ||
    fb_die "$FB_EXIT_USAGE" "${from:-$from_file}: its worker container $container asks no nvidia.com/gpu (a Trainer v2 runtime leaves that to each TrainJob): pass --ranks-per-node N, the GPUs per node"
  sts_name=$(worker_name "$name")
  instance=from-${sts_name#fabric-bench-from-}
  runtime_source=delivered:$kind/$src_ns/$name@$gen
  runtime_annotation=$runtime_source
  manifest=""
  fb_mktemp manifest
  derive_jq manifest "$art" >"$manifest" 2>"$FB_LAUNCH_ERR" ||
    fb_die "$FB_EXIT_INPUT" "${from:-$from_file}: $(jq_failure "$FB_LAUNCH_ERR")"
  selector=app.kubernetes.io/name=fabric-bench,app.kubernetes.io/instance=$instance
  wiring_what="$kind/$name${gen:+ (generation $gen)}"
  list_privileges
}

# list_privileges: every field of the derived workers that grants privilege
# (launch/derive.jq's privileges), one line each, before anything is applied:
# on stderr for derive, whose stdout is the manifest, else on stdout with
# the run's other progress. Sets granted to their number.
list_privileges() {
  local lines line out=1
  [ "$subcommand" != derive ] || out=2
  lines=$(derive_jq privileges "$manifest" 2>"$FB_LAUNCH_ERR" | jq -r '.[]') ||
    fb_die "$FB_EXIT_INPUT" "${from:-$from_file}: $(jq_failure "$FB_LAUNCH_ERR")"
  granted=0
  [ -n "$lines" ] || return 0
  granted=$(grep -c . <<<"$lines")
  {
    echo "$FB_PROG: the derived workers grant privilege beyond their containers; a run applies them only with --yes:"
    while IFS= read -r line; do echo "$FB_PROG:   $line"; done <<<"$lines"
  } >&"$out"
}

# print_manifest FILE: the derived objects as YAML documents or JSON.
print_manifest() {
  if [ "$output" = json ]; then
    jq . "$1"
  else
    # Multi-line values (the NRI device list, a JSON annotation) print as
    # block scalars, as kubectl prints them, not as escaped one-liners.
    python3 -c '
import json, sys, yaml
def text(dumper, value):
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)
yaml.SafeDumper.add_representer(str, text)
yaml.safe_dump_all(json.load(open(sys.argv[1]))["items"], sys.stdout, sort_keys=False, default_flow_style=False, width=120)' "$1" ||
      fb_die "$FB_EXIT_UNAVAILABLE" "YAML output needs python3 with PyYAML (apt-get install python3-yaml): or pass -o json"
  fi
}

# remove_workers: the derived StatefulSet and Service go when the launcher
# exits, however it exits (unless --keep).
# shellcheck disable=SC2317 # the EXIT trap calls it
remove_workers() {
  "${kubectl[@]}" -n "$ns" delete statefulset/"$sts_name" service/"$sts_name" --ignore-not-found --wait=false \
    </dev/null >/dev/null 2>&1 || fb_info "could not delete statefulset/$sts_name and service/$sts_name in $ns: delete them yourself"
  fb_cleanup
}

case $output in yaml | json) ;; *) fb_die "$FB_EXIT_USAGE" "--output wants yaml or json, got $(fb_shown "$output")" ;; esac
sts_name="" runtime_source="" wiring_what="" granted=0
if [ "$subcommand" = derive ]; then
  [ -n "$from$from_file" ] || fb_die "$FB_EXIT_USAGE" "derive needs --from KIND/NAME or --from-file FILE"
  fb_need jq "install jq (apt-get install jq)"
  fb_mktemp FB_LAUNCH_ERR
  derive_workers
  print_manifest "$manifest"
  exit 0
fi

# check_scan ARGS...: the scan's options and fabric-scan's; sets coll.
check_scan() {
  local a
  for a in "$@"; do fb_check_text "fabric-scan's argument" "$a"; done
  case $scan_mode in fast | exhaustive) ;; *) fb_die "$FB_EXIT_USAGE" "--mode wants fast or exhaustive, got $(fb_shown "$scan_mode")" ;; esac
  if [ -n "$pool" ]; then
    # A label selector of one KEY=VALUE: kubectl gets it as one argument.
    [[ $pool =~ ^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?=([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$ ]] ||
      fb_die "$FB_EXIT_USAGE" "--pool wants a node label LABEL=VALUE (cloud.google.com/gke-nodepool=a3-pool), got $(fb_shown "$pool")"
  fi
  [[ $rack_label =~ ^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$ ]] ||
    fb_die "$FB_EXIT_USAGE" "--rack-label wants a node label key (topology.kubernetes.io/zone), got $(fb_shown "$rack_label")"
  [ -z "$from$from_file" ] || fb_die "$FB_EXIT_USAGE" "--from and --from-file go with a benchmark run, not a scan: scan the workers by -l"
  for a in "$@"; do
    case $a in --topology | --topology=* | --rack-label | --rack-label=* | -J | --json | --json=* | --cluster | --cluster=* | --mode | --mode=*)
      fb_die "$FB_EXIT_USAGE" "fabric-scan's $(fb_shown "${a%%=*}") is the launcher's to set: use --rack-label, --no-racks, --cluster or --mode before the --" ;;
    esac
  done
  fb_check_options
  coll=scan
}
# check_probe ARGS...: fabric-rdma's options; sets coll. Where the result
# goes is the launcher's to say.
check_probe() {
  local a
  for a in "$@"; do
    fb_check_text "fabric-rdma's argument" "$a"
    case $a in -J | --json | --json=* | --cluster | --cluster=* | --results-dir | --results-dir=*)
      fb_die "$FB_EXIT_USAGE" "fabric-rdma's $(fb_shown "${a%%=*}") is the launcher's to set: use --cluster or --results before the --" ;;
    esac
  done
  fb_check_options
  coll=probe
}
# probe_args ARGS...: fabric-rdma's command line, the fabric profile's
# transport first unless ARGS name one.
probe_args() {
  local a kv transport=""
  for a in "$@"; do
    case $a in --transport | --transport=*) transport=given ;; esac
  done
  if [ -z "$transport" ]; then
    for kv in "${FB_ENV[@]+"${FB_ENV[@]}"}"; do
      case $kv in FABRIC_PROBE_TRANSPORT=?*) transport=${kv#*=} ;; esac
    done
  fi
  FB_COLL_ARGS=()
  case $transport in "" | given) ;; *) FB_COLL_ARGS=(--transport "$transport") ;; esac
  FB_COLL_ARGS+=("$@" --cluster "$cluster")
}
if [ "$subcommand" = scan ]; then
  check_scan "$@"
elif [ "$subcommand" = probe ]; then
  check_probe "$@"
else
  fb_check_common kubectl.sh "$@"
  coll=$FB_COLLECTIVE
fi
fb_check_uint --wait "$wait_s"
fb_check_uint --ssh-wait "$ssh_wait"
[ -z "$want_pods" ] || fb_check_uint --pods "$want_pods"
[ -z "$slots" ] || fb_check_uint --ranks-per-node "$slots"
fb_check_port --ssh-port "$ssh_port"
fb_check_word --ssh-key "$ssh_key"
[ -z "$rsh" ] || fb_check_word --rsh "$rsh"
[ -z "$workdir" ] || [[ $workdir == /* ]] ||
  fb_die "$FB_EXIT_USAGE" "--workdir wants an absolute path inside the pod, got $(fb_shown "$workdir")"
[ "$FB_DRY_RUN" = 1 ] || fb_need "${kubectl[0]}" "install kubectl or pass --kubectl"
fb_need jq "install jq (apt-get install jq)"
fb_mktemp FB_LAUNCH_ERR
if [ -n "$from$from_file" ]; then
  derive_workers
  # Nothing is asked of the cluster before the user has seen and accepted
  # what the workers would be allowed to do on its nodes.
  [ "$granted" = 0 ] || [ "$yes" = 1 ] || [ "$FB_DRY_RUN" = 1 ] ||
    fb_die "$FB_EXIT_USAGE" "the derived workers grant privilege ($granted fields, listed above): check them against what the training job needs, then pass --yes to apply them"
elif [ -n "$from_job$gpu_nics" ] || [ "$networks_given" = 1 ] || [ "$yes" = 1 ]; then
  fb_die "$FB_EXIT_USAGE" "--from-job, --gpu-nics, --networks and --yes go with --from or --from-file"
fi

# ---- two free GPU nodes, or nothing to wait for ----------------------------------------
# capacity_gate N NODES: exit 11 at once unless NODES nodes have N GPUs free
# (launch/capacity.jq); a user who may not list nodes gets a note instead.
capacity_gate() {
  local nodes pods lines free=0 why=() node state
  # Each call within --wait (30 s at most): a stalled API server is named
  # as soon as the wait would name it.
  local bound=$((wait_s < 30 ? (wait_s > 1 ? wait_s : 1) : 30))
  fb_mktemp nodes
  fb_mktemp pods
  for what in nodes pods; do
    local out=$nodes args=(get nodes -o json)
    [ "$what" = pods ] && out=$pods args=(get pods -A -o json)
    timeout -k 2 "$bound" "${kubectl[@]}" "${args[@]}" >"$out" 2>"$FB_LAUNCH_ERR"
    case $? in
      0) ;;
      124 | 137) fb_die "$FB_EXIT_TIMEOUT" "kubectl get $what did not answer within ${bound}s: check the API server (kubectl cluster-info) and the context (kubectl config current-context)" ;;
      *)
        if grep -qi 'forbidden' "$FB_LAUNCH_ERR"; then
          fb_info "free GPU nodes not checked: kubectl get $what is forbidden to this user (--no-capacity-check silences this)"
          return 0
        fi
        fb_die "$FB_EXIT_RUNTIME" "kubectl get $what failed ($(head -c 200 "$FB_LAUNCH_ERR" | tr '\n' ' ')): check the context, or pass --no-capacity-check" ;;
    esac
  done
  # The workers this run selects (-l, or the derived StatefulSet's instance)
  # hold their GPUs for this run; every other pod, another run's fabric-bench
  # workers too, holds its own.
  local mine others
  fb_mktemp mine
  fb_mktemp others
  timeout -k 2 "$bound" "${kubectl[@]}" -n "$ns" get pods -l "$selector" -o json >"$mine" 2>/dev/null
  case $? in
    124 | 137) fb_die "$FB_EXIT_TIMEOUT" "kubectl get pods did not answer within ${bound}s: check the API server (kubectl cluster-info) and the context (kubectl config current-context)" ;;
  esac
  if jq -e '.items' "$mine" >/dev/null 2>&1; then
    jq --slurpfile mine "$mine" --arg ns "$ns" \
      '([$mine[0].items[] | "\(.metadata.namespace // $ns)/\(.metadata.name)"]) as $own
       | .items |= map(select(("\(.metadata.namespace)/\(.metadata.name)" | IN($own[])) | not))' \
      "$pods" >"$others" && pods=$others
  fi
  lines=$(fb_free_gpu_nodes "$nodes" "$pods" "$1") ||
    fb_die "$FB_EXIT_RUNTIME" "kubectl get nodes or pods -A returned something that is not a list: check the API server"
  while IFS=$'\t' read -r node state; do
    [ -n "$node" ] || continue
    if [ "$state" = free ]; then free=$((free + 1)) why+=("$node: free")
    elif [ "$node" = - ]; then why+=("$state")
    else why+=("$node: $state"); fi
  done <<<"$lines"
  [ "$free" -ge "$2" ] && return 0
  [ ${#why[@]} -gt 0 ] || why=("no nodes")
  # One line, even on a large cluster: the first twelve, then a count.
  [ ${#why[@]} -le 12 ] || why=("${why[@]:0:12}" "and $((${#why[@]} - 12)) more")
  local IFS=';'
  local wanted="two free GPU nodes"
  [ "$2" -le 2 ] || wanted="$2 free GPU nodes (--pods $2)"
  fb_die "$FB_EXIT_SKIPPED" "skipped: needs $wanted ($(printf '%s' "${why[*]}" | sed 's/;/; /g')) with $1 GPUs each: free or uncordon them, or pass --no-capacity-check"
}
if [ "$FB_DRY_RUN" != 1 ] && [ "$capacity_check" = 1 ] && [ "$subcommand" != scan ]; then
  # One worker per node: as many free nodes as workers, two at least.
  capacity_gate "${worker_gpus:-${slots:-1}}" "$(( ${want_pods:-2} > 2 ? ${want_pods:-2} : 2 ))"
fi

# ---- the env launch: the workload's pods run fabric-coll themselves ------------------
# No sshd and no mpirun: an Indexed Job (manifests/envjob), JobSet
# (manifests/jobset) or PyTorchJob (manifests/pytorchjob/overlays-env) of
# --pods pods, one process each, NCCL bootstrapping the job from pod 0
# (docs/clusters.md, "The env launch"). Rank 0's pod keeps its result until
# it is copied here (launch/env-pod.sh).

# env_overlay FABRIC: the workload's overlay for the fabric.
env_overlay() {
  case $workload in
    job) echo "$FB_LAUNCH_ROOT/manifests/envjob/overlays/$1" ;;
    jobset) echo "$FB_LAUNCH_ROOT/manifests/jobset/overlays/$1" ;;
    pytorchjob) echo "$FB_LAUNCH_ROOT/manifests/pytorchjob/overlays-env/$1" ;;
  esac
}

# env_render OUT: the overlay of the fabric (or the derived workers of
# --from) as a JSON List in OUT.
env_render() {
  if [ -n "$sts_name" ]; then
    cp -- "$manifest" "$1"
    return 0
  fi
  local dir
  dir=$(env_overlay "$fabric")
  [ -f "$dir/kustomization.yaml" ] ||
    fb_die "$FB_EXIT_USAGE" "no $workload overlay for fabric $(fb_shown "$fabric"): --launcher env needs --fabric, one of $(fb_list_fabrics)"
  "${kubectl[@]}" kustomize "$dir" >"$1.yaml" 2>"$FB_LAUNCH_ERR" ||
    fb_die "$FB_EXIT_INPUT" "kubectl kustomize $dir failed ($(head -c 200 "$FB_LAUNCH_ERR" | tr '\n' ' ')): check the overlay"
  python3 -c 'import json, sys, yaml; print(json.dumps({"apiVersion": "v1", "kind": "List", "items": [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]}))' \
    "$1.yaml" >"$1" 2>"$FB_LAUNCH_ERR" ||
    fb_die "$FB_EXIT_UNAVAILABLE" "reading the rendered overlay needs python3 with PyYAML (apt-get install python3-yaml)"
  rm -f -- "$1.yaml"
}

# env_gpus FILE: the worker container's GPU limit in the rendered List, else 1.
env_gpus() {
  local g
  g=$(jq -r --arg c "$container" '[.. | objects | select(.containers?) | .containers[]? | select(.name == $c)
        | .resources.limits["nvidia.com/gpu"] // empty][0] // "1" | tostring' "$1" 2>/dev/null)
  fb_is_uint "$g" && [ "$g" -ge 1 ] && echo "$g" || echo 1
}

# env_workload_ref: the applied workload as KIND/NAME for kubectl delete,
# and the selector of its pods.
env_workload_ref() {
  jq -r '.items[] | select(.kind == "Job" or .kind == "JobSet" or .kind == "PyTorchJob")
    | if .kind == "Job" then "job/\(.metadata.name) batch.kubernetes.io/job-name=\(.metadata.name)"
      elif .kind == "JobSet" then "jobset/\(.metadata.name) jobset.sigs.k8s.io/jobset-name=\(.metadata.name)"
      else "pytorchjob/\(.metadata.name) training.kubeflow.org/job-name=\(.metadata.name)" end' "$1"
}

# remove_env_job: the workload and its Secret go when the launcher exits
# (unless --keep); the rest of the overlay stays, as kubectl apply -k leaves it.
# shellcheck disable=SC2317 # the EXIT trap calls it
remove_env_job() {
  "${kubectl[@]}" -n "$ns" delete "$env_ref" secret/fabric-bench-job --ignore-not-found --wait=false \
    </dev/null >/dev/null 2>&1 || fb_info "could not delete $env_ref and secret/fabric-bench-job in $ns: delete them yourself"
  fb_cleanup
}

# One line per pod: name, rank, phase, the worker container's state
# (running, terminated, waiting), its exit code, and why it has not started,
# separated by \x1f.
# shellcheck disable=SC2016 # a jq program
env_pods_jq='
  .items[] |
  (.metadata.labels // {}) as $l |
  (if $l["training.kubeflow.org/replica-type"] == "master" then 0
   elif $l["training.kubeflow.org/replica-type"] == "worker" then 1 + ($l["training.kubeflow.org/replica-index"] // "0" | tonumber)
   else ((.metadata.annotations // {})["batch.kubernetes.io/job-completion-index"] // "-1" | tonumber) end) as $rank |
  ([(.status.containerStatuses // [])[] | select(.name == $c)][0] // {}) as $cs |
  (.status.conditions // [] | map(select(.type == "PodScheduled" and .status == "False"))[0].message // "") as $unsched |
  [ .metadata.name, $rank, (.status.phase // "Unknown"),
    (if $cs.state.terminated then "terminated" elif $cs.state.running then "running" else "waiting" end),
    ($cs.state.terminated.exitCode // ""),
    (if .status.phase == "Pending" and $unsched != "" then "Pending, unschedulable: " + $unsched
     elif $cs.state.waiting then "\(.status.phase // "Unknown"): \($cs.state.waiting.reason // "waiting")" + (if $cs.state.waiting.message then " (" + $cs.state.waiting.message + ")" else "" end)
     else (.status.phase // "Unknown") end)
  ] | map(tostring | gsub("[\u0000-\u001f\u007f]"; " ")) | join("\u001f")'

# json_array WORDS...: the words as a JSON array, one per line (none holds a
# control character: fb_check_text); jq would read a word such as -b after
# --args as its own option.
json_array() { printf '%s\n' "$@" | jq -nRc '[inputs]'; }

env_run() {
  [ "$subcommand" = "" ] ||
    fb_die "$FB_EXIT_USAGE" "kubectl.sh $subcommand runs over mpirun; --launcher env goes with a benchmark run (launch/kubectl.sh --launcher env --fabric F all_reduce ...)"
  case $workload in job | jobset | pytorchjob) ;; *) fb_die "$FB_EXIT_USAGE" "--workload wants job, jobset or pytorchjob, got $(fb_shown "$workload")" ;; esac
  [ -z "$sts_name" ] || [ "$workload" = job ] ||
    fb_die "$FB_EXIT_USAGE" "--from under --launcher env runs the derived pod template as an Indexed Job: leave out --workload $workload"
  fb_check_uint --deadline "$deadline_s"
  fb_check_port --master-port "$master_port"
  local a
  for a in "$@"; do
    case $a in -J | --output_file | --output_file=* | --launcher | --launcher=* | --cluster | --cluster=*)
      fb_die "$FB_EXIT_USAGE" "fabric-coll's $(fb_shown "${a%%=*}") is the launcher's to set under --launcher env: use --cluster or --results before the collective" ;;
    esac
  done
  # The Training Operator runs the container named pytorch.
  [ "$workload" != pytorchjob ] || [ "$container_given" = 1 ] || container=pytorch
  pods_n=${want_pods:-2}
  [ "$pods_n" -ge 2 ] || fb_die "$FB_EXIT_USAGE" "--pods $pods_n: the env launch wants two pods at least"
  fabric=${FB_OPT_FABRIC:-none}
  [ -n "$sts_name" ] || [ "$fabric" != none ] ||
    fb_die "$FB_EXIT_USAGE" "--launcher env applies a workload: name its fabric with --fabric, one of $(fb_list_fabrics)"
  fb_set_env "$fabric"
  [ -n "$runtime_source" ] || runtime_source=fabric-bench:$fabric
  context=""
  [ -n "$FB_OPT_CLUSTER_FROM" ] || context=$(k config current-context 2>/dev/null) || context=""
  cluster=$(fb_cluster "$context" kubernetes)
  stamp=$(fb_utc_stamp)
  pod_bin=${pod_bin:-$pod_root/bin}
  local rendered applied secret job_dir gpus
  fb_mktemp rendered
  fb_mktemp applied
  fb_mktemp secret
  env_render "$rendered"
  gpus=${slots:-$(env_gpus "$rendered")}
  job_dir=${workdir:-/tmp}/fabric-bench-$stamp-$coll
  local args=("$@") has_g=0 envs=() kv
  for a in "$@"; do case $a in -g | --ngpus | --ngpus=* | -t | --nthreads | --nthreads=*) has_g=1 ;; esac; done
  # One process per pod drives the pod's GPUs, unless the arguments say otherwise.
  [ "$has_g" = 1 ] || args+=(-g "$gpus")
  args+=(--launcher env --cluster "$cluster" --runtime-source "$runtime_source" -J "$job_dir/result.json" --nccl-log)
  for kv in "${FB_ENV[@]+"${FB_ENV[@]}"}" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET "FB_COLLECT_WAIT=$((wait_s + 60))"; do
    envs+=("$(jq -cn --arg kv "$kv" '{name: ($kv | split("=")[0]), value: ($kv | sub("^[^=]*="; ""))}')")
  done
  fb_new_secret "$secret"
  jq --arg container "$container" --arg ns "$ns" --argjson pods "$pods_n" --argjson port "$master_port" \
    --argjson deadline "$deadline_s" --rawfile secret "$secret" \
    --argjson command "$(json_array "$pod_root/launch/env-pod.sh" "$job_dir" "$pod_root/launch/rank.sh" "$pod_bin/fabric-coll")" \
    --argjson args "$(json_array "${args[@]}")" \
    --argjson env "$(printf '%s\n' "${envs[@]}" | jq -cs .)" \
    -f "$FB_LAUNCH_ROOT/launch/envjob.jq" "$rendered" >"$applied" 2>"$FB_LAUNCH_ERR" ||
    fb_die "$FB_EXIT_INPUT" "${from:-${from_file:-$(env_overlay "$fabric")}}: $(jq_failure "$FB_LAUNCH_ERR")"
  local ref
  ref=$(env_workload_ref "$applied")
  env_ref=${ref%% *} env_selector=${ref#* }
  fb_info "$pods_n pods ($workload $env_ref in $ns), one process each with $([ "$has_g" = 1 ] && echo "the given GPUs" || echo "$gpus GPUs"), fabric $fabric; no sshd, no mpirun"
  if [ "$FB_DRY_RUN" = 1 ]; then
    echo "+ $(fb_quote "${kubectl[@]}" apply -f -) <<'EOF'"
    # The per-job secret is never printed.
    jq '.items |= map(if .kind == "Secret" then .stringData.secret = "(a new per-job secret)" else . end)' "$applied" >"$applied.shown"
    print_manifest "$applied.shown"
    rm -f -- "$applied.shown"
    echo "EOF"
    echo "+ $(fb_quote "${kubectl[@]}" -n "$ns" get pods -l "$env_selector" -o json)   # until rank 0 has ended, at most ${wait_s}s to start and ${deadline_s}s to run"
    echo "+ $(fb_quote "${kubectl[@]}" -n "$ns" cp -c "$container" "POD0:$job_dir/result.json" "$FB_OPT_RESULTS/$cluster/$stamp-$coll.json")"
    exit 0
  fi
  [ "$keep" = 1 ] || trap remove_env_job EXIT
  "${kubectl[@]}" apply -f - <"$applied" >/dev/null 2>"$FB_LAUNCH_ERR" ||
    fb_die "$FB_EXIT_RUNTIME" "kubectl apply of $env_ref failed ($(head -c 200 "$FB_LAUNCH_ERR" | tr '\n' ' ')): a $env_ref left from another run is deleted with kubectl -n $ns delete $env_ref; see the workload with --dry-run"
  fb_info "applied $env_ref and secret/fabric-bench-job in $ns"
  env_wait "$job_dir"
  env_collect "$job_dir"
}

# env_wait DIR: until rank 0 has ended: its DIR/rc is there (env-pod.sh),
# or its container terminated. Every pod must have started within --wait;
# the run then has --deadline. Sets pod0 and pod0_exit ("" while it waits
# for the copy).
env_wait() {
  local start_deadline=$((SECONDS + wait_s)) run_deadline="" json table n started first_bad
  local name rank state code why
  pod0="" pod0_exit=""
  while :; do
    local left=$((start_deadline - SECONDS))
    [ -z "$run_deadline" ] || left=$((run_deadline - SECONDS))
    json=$(timeout -k 2 $((left > 5 ? (left < 30 ? left : 30) : 5)) "${kubectl[@]}" -n "$ns" get pods -l "$env_selector" -o json 2>"$FB_LAUNCH_ERR")
    case $? in
      0) ;;
      124 | 137) fb_die "$FB_EXIT_TIMEOUT" "kubectl get pods did not answer in time: check the API server (kubectl cluster-info) and the context (kubectl config current-context)" ;;
      *) fb_die "$FB_EXIT_RUNTIME" "kubectl get pods failed ($(head -c 200 "$FB_LAUNCH_ERR" | tr '\n' ' ')): check the context and access to namespace $ns" ;;
    esac
    table=$(jq -r --arg c "$container" "$env_pods_jq" <<<"$json") ||
      fb_die "$FB_EXIT_RUNTIME" "kubectl get pods returned something that is not a pod list"
    n=0 started=0 first_bad="" pod0=""
    local pod0_state="" pod0_code=""
    while IFS=$'\x1f' read -r name rank _ state code why; do
      [ -n "$name" ] || continue
      [[ $name =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] ||
        fb_die "$FB_EXIT_INPUT" "kubectl get pods listed a pod named $(fb_shown "$name"), not a Kubernetes name: check the API server"
      n=$((n + 1))
      if [ "$state" != waiting ]; then started=$((started + 1)); else [ -n "$first_bad" ] || first_bad="$name"$'\t'"$why"; fi
      [ "$rank" != 0 ] || { pod0=$name pod0_state=$state pod0_code=$code; }
    done <<<"$table"
    if [ "$pod0_state" = terminated ]; then
      pod0_exit=${pod0_code:-$FB_EXIT_RUNTIME}
      return 0
    fi
    if [ "$pod0_state" = running ] &&
      k -n "$ns" exec "$pod0" -c "$container" -- test -e "$1/rc" </dev/null >/dev/null 2>&1; then
      return 0
    fi
    if [ -z "$run_deadline" ] && [ "$n" -ge "$pods_n" ] && [ "$started" -eq "$n" ]; then
      run_deadline=$((SECONDS + deadline_s + 30))
      fb_info "$n pods started; rank 0 is $pod0 (the run: at most ${deadline_s}s, the job's deadline)"
    fi
    if [ -z "$run_deadline" ] && [ "$SECONDS" -ge "$start_deadline" ]; then
      if [ "$n" -eq 0 ]; then
        fb_die "$FB_EXIT_TIMEOUT" "no pods of $env_ref in namespace $ns after ${wait_s}s: kubectl -n $ns describe $env_ref says why (a missing CRD or operator, quota)"
      elif [ -n "$first_bad" ]; then
        fb_die "$FB_EXIT_TIMEOUT" "$started of $pods_n pods started after ${wait_s}s; pod ${first_bad%%$'\t'*} did not (${first_bad#*$'\t'}): $(pod_fix "${first_bad#*$'\t'}" "${first_bad%%$'\t'*}")"
      else
        fb_die "$FB_EXIT_TIMEOUT" "only $n of $pods_n pods of $env_ref exist after ${wait_s}s: kubectl -n $ns describe $env_ref says why"
      fi
    fi
    if [ -n "$run_deadline" ] && [ "$SECONDS" -ge "$run_deadline" ]; then
      fb_die "$FB_EXIT_TIMEOUT" "rank 0 ($pod0) did not end within ${deadline_s}s (--deadline): kubectl -n $ns logs $pod0 shows where it is"
    fi
    sleep 2
  done
}

# env_collect DIR: rank 0's result and log here, then the verdict.
env_collect() {
  local dir=$1 local_dir=$FB_OPT_RESULTS/$cluster rc
  local result=$local_dir/$stamp-$coll.json log=$local_dir/$stamp-$coll.log
  mkdir -p "$local_dir" || fb_die "$FB_EXIT_INPUT" "cannot create $local_dir: choose another --results"
  local in_pod0=(-n "$ns" exec "$pod0" -c "$container" --)
  if [ -z "$pod0_exit" ]; then
    rc=$(k "${in_pod0[@]}" cat "$dir/rc" </dev/null 2>/dev/null)
    fb_is_uint "$rc" || rc=$FB_EXIT_RUNTIME
    k -n "$ns" cp -c "$container" "$pod0:$dir/result.json" "$result" >/dev/null 2>&1 || rm -f "$result"
    k -n "$ns" cp -c "$container" "$pod0:$dir/run.log" "$log" >/dev/null 2>&1 || true
    # Rank 0's pod may end now.
    k "${in_pod0[@]}" touch "$dir/collected" </dev/null >/dev/null 2>&1 || true
  else
    # Its container ended before the copy: what it printed is all there is.
    rc=$pod0_exit
    rm -f "$result"
    k -n "$ns" logs "$pod0" -c "$container" </dev/null >"$log" 2>/dev/null || true
  fi
  if [ ! -s "$result" ]; then
    local cause
    cause=$(grep -m 1 -E '^(fabric-[a-z]+|env-pod\.sh|fabric-bench rank on [^:]*): ' "$log" 2>/dev/null | cut -c1-300)
    fb_die "$(( rc ? rc : FB_EXIT_RUNTIME ))" "the run wrote no result (rank 0, $pod0, exit $rc${cause:+: $cause}): see $log"
  fi
  fb_info "result: $result"
  [ "$rc" -ne 0 ] && fb_info "the run exited $rc; judging what was measured"
  local report v
  report=$(fb_report_bin) || exit "$rc"
  "$report" check "$result" "${FB_OPT_REPORT[@]+"${FB_OPT_REPORT[@]}"}"
  v=$?
  exit "$v"
}

env_ref="" env_selector="" pods_n=2 pod0="" pod0_exit=""
if [ "$FB_OPT_LAUNCHER" = env ]; then
  env_run "$@"
fi

# The derived workers: applied now, deleted at exit (unless --keep).
if [ -n "$sts_name" ]; then
  if [ "$FB_DRY_RUN" = 1 ]; then
    echo "+ $(fb_quote "${kubectl[@]}" apply -f -) <<'EOF'"
    print_manifest "$manifest"
    echo "EOF"
  else
    # Set before the apply: a List applies object by object, so a refused
    # StatefulSet leaves its Service behind unless the exit removes it.
    [ "$keep" = 1 ] || trap remove_workers EXIT
    "${kubectl[@]}" apply -f - <"$manifest" >/dev/null 2>"$FB_LAUNCH_ERR" ||
      fb_die "$FB_EXIT_RUNTIME" "kubectl apply of statefulset/$sts_name failed ($(head -c 200 "$FB_LAUNCH_ERR" | tr '\n' ' ')): see it with launch/kubectl.sh derive ${from:+--from $from}${from_file:+--from-file $from_file}"
    fb_info "applied statefulset/$sts_name and service/$sts_name in $ns from $wiring_what"
  fi
fi

# ---- wait until every pod and container is Ready, with a bound --------------------
# One line per pod: name, ready?, host name, GPUs, fabric annotation, and why
# it is not ready, separated by \x1f: a tab is white space to read, so an
# empty field (a pod without the annotation) would vanish between two.
# Control characters in any field (a multi-line message) become spaces.
# Native sidecars (initContainers with restartPolicy Always) count as
# containers, as kubectl get pods shows them (2/2).
# shellcheck disable=SC2016 # a jq program
pods_jq='
  .items[] |
  (.status.containerStatuses // []) as $cs |
  (.status.initContainerStatuses // []) as $ics |
  ([.spec.initContainers[]? | select(.restartPolicy == "Always") | .name]) as $sidecars |
  ($cs + [$ics[] | select(.name as $n | $sidecars | index($n))]) as $all |
  (([.spec.containers[].name] + $sidecars) | length) as $want |
  ([$all[] | select(.ready)] | length) as $ready |
  (.status.conditions // [] | map(select(.type == "PodScheduled" and .status == "False"))[0].message // "") as $unsched |
  ([$all[] | select(.ready | not) |
     "\(.name) \(.state.waiting.reason // (if .state.terminated then "terminated: " + (.state.terminated.reason // "") else "not ready" end))" +
     (if .state.waiting.message then " (" + .state.waiting.message + ")" else "" end)] | join(", ")) as $why |
  [ .metadata.name,
    (if .status.phase == "Running" and $ready == $want and $want > 0 then "ready" else "waiting" end),
    ((.spec.hostname // .metadata.name) + (if .spec.subdomain then "." + .spec.subdomain else "" end)),
    ((.spec.containers[] | select(.name == $c) | .resources.limits["nvidia.com/gpu"]) // "0"),
    (.metadata.annotations["fabric-bench/fabric"] // ""),
    (if .status.phase == "Pending" and $unsched != "" then "Pending, unschedulable: " + $unsched
     elif .status.phase != "Running" then "\(.status.phase // "Unknown") \($ready)/\($want) ready" + (if $why != "" then ": " + $why else "" end)
     else "\($ready)/\($want) containers ready" + (if $why != "" then ": " + $why else "" end) end)
  ] | map(tostring | gsub("[\u0000-\u001f\u007f]"; " ")) | join("\u001f")'

# The fix that goes with the first problem seen.
pod_fix() {
  case $1 in
    *unschedulable*) echo "free the resources it asks for (GPUs, fabric devices) or lower them in the overlay" ;;
    *tcpxo-daemon*) echo "kubectl -n $ns logs $2 -c tcpxo-daemon: RxDM seeing 0/8 GPUs means the /sys mount is missing, 7/8 a gVNIC in a GPU NIC slot" ;;
    *ContainerCreating*) echo "kubectl -n $ns describe pod $2: a missing Secret fabric-bench-ssh (launch/kubectl.sh keygen -n $ns) or ConfigMap keeps it there" ;;
    *ImagePull* | *ErrImage*) echo "the image cannot be pulled: check the image name and tag in the overlay and the registry's credentials" ;;
    *CrashLoop* | *terminated*) echo "kubectl -n $ns logs $2 --all-containers tells why a container exits" ;;
    *"$container not ready"*) echo "its sshd does not accept connections on port $ssh_port (the readinessProbe): kubectl -n $ns logs $2 -c $container" ;;
    *) echo "kubectl -n $ns describe pod $2" ;;
  esac
}

declare -a pods=() hosts=() gpus=() fabrics=()
if [ "$FB_DRY_RUN" = 1 ]; then
  echo "+ $(fb_quote "${kubectl[@]}" -n "$ns" get pods -l "$selector" -o json)   # until every container is Ready, at most ${wait_s}s"
  for ((i = 0; i < ${want_pods:-2}; i++)); do
    p=${sts_name:-fabric-bench}
    pods+=("$p-$i") hosts+=("$p-$i.$p") gpus+=("${worker_gpus:-0}") fabrics+=("")
  done
else
  deadline=$((SECONDS + wait_s))
  while :; do
    # An API server that accepts and stalls must not outlast the bound.
    left=$((deadline - SECONDS))
    json=$(timeout -k 2 $((left > 5 ? left : 5)) "${kubectl[@]}" -n "$ns" get pods -l "$selector" -o json 2>"$FB_LAUNCH_ERR")
    case $? in
      0) ;;
      124 | 137)
        fb_die "$FB_EXIT_TIMEOUT" "kubectl get pods did not answer within ${wait_s}s: check the API server (kubectl cluster-info) and the context (kubectl config current-context)" ;;
      *)
        fb_die "$FB_EXIT_RUNTIME" "kubectl get pods failed ($(head -c 200 "$FB_LAUNCH_ERR" | tr '\n' ' ')): check the context (kubectl config current-context) and access to namespace $ns" ;;
    esac
    table=$(jq -r --arg c "$container" "$pods_jq" <<<"$json") ||
      fb_die "$FB_EXIT_RUNTIME" "kubectl get pods returned something that is not a pod list"
    n=0 nready=0 first_bad=""
    while IFS=$'\x1f' read -r name state _ _ _ why; do
      [ -n "$name" ] || continue
      n=$((n + 1))
      if [ "$state" = ready ]; then nready=$((nready + 1)); else [ -n "$first_bad" ] || first_bad="$name"$'\t'"$why"; fi
    done <<<"$table"
    need=${want_pods:-2}
    [ "$n" -ge "$need" ] && [ "$nready" -eq "$n" ] && break
    if [ "$SECONDS" -ge "$deadline" ]; then
      if [ "$n" -eq 0 ]; then
        fb_die "$FB_EXIT_TIMEOUT" "no pods match -l $selector in namespace $ns after ${wait_s}s: apply the manifests (kubectl apply -k manifests/overlays/<fabric>) or fix -n/-l"
      elif [ -n "$first_bad" ]; then
        fb_die "$FB_EXIT_TIMEOUT" "pod ${first_bad%%$'\t'*} not Ready after ${wait_s}s (${first_bad#*$'\t'}): $(pod_fix "${first_bad#*$'\t'}" "${first_bad%%$'\t'*}")"
      else
        fb_die "$FB_EXIT_TIMEOUT" "only $n of $need pods exist after ${wait_s}s: scale the StatefulSet (replicas) or pass --pods $n"
      fi
    fi
    sleep 2
  done
  while IFS=$'\x1f' read -r name _ host gpu fab _; do
    # Names go to kubectl, ssh and mpirun as arguments: a pod list must not
    # slip an option or a bad name in.
    [[ $name =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] ||
      fb_die "$FB_EXIT_INPUT" "kubectl get pods listed a pod named $(fb_shown "$name"), not a Kubernetes name: check the selector (-l) and the API server"
    fb_check_host "$FB_EXIT_INPUT" "pod $name (spec.hostname and spec.subdomain)" "$host"
    pods+=("$name") hosts+=("$host") gpus+=("$gpu") fabrics+=("$fab")
  done <<<"$(sort <<<"$table")"
fi

# ---- scan: each worker's node, the pool, the racks ----------------------------------
# scan_nodes: keeps the workers on nodes of the pool, one per node, sets
# node_names (spec.nodeName, in the pods' order) and topo (the pool's node
# list, fabric-scan's --topology).
scan_nodes() {
  local sel=() i name node
  [ -z "$pool" ] || sel=(-l "$pool")
  fb_mktemp topo
  if [ "$FB_DRY_RUN" = 1 ]; then
    echo "+ $(fb_quote "${kubectl[@]}" get nodes "${sel[@]}" -o json) > nodes.json"
    for name in "${pods[@]}"; do node_names+=("NODE-OF-$name"); done
    return 0
  fi
  timeout -k 2 30 "${kubectl[@]}" get nodes "${sel[@]}" -o json >"$topo" 2>"$FB_LAUNCH_ERR"
  case $? in
    0) ;;
    124 | 137) fb_die "$FB_EXIT_TIMEOUT" "kubectl get nodes did not answer within 30s: check the API server (kubectl cluster-info)" ;;
    *) fb_die "$FB_EXIT_RUNTIME" "kubectl get nodes failed ($(head -c 200 "$FB_LAUNCH_ERR" | tr '\n' ' ')): a scan reads the nodes (their racks, the pool); check the context and that you may list nodes" ;;
  esac
  local in_pool
  in_pool=$(jq -r '.items[].metadata.name' "$topo" 2>/dev/null) ||
    fb_die "$FB_EXIT_RUNTIME" "kubectl get nodes returned something that is not a node list: check the API server"
  declare -A node_of=() pod_on=()
  while IFS=$'\x1f' read -r name node; do
    [ -n "$name" ] && node_of[$name]=$node
  done < <(jq -r '.items[] | [.metadata.name, (.spec.nodeName // "")] | map(gsub("[\u0000-\u001f\u007f]"; "?")) | join("\u001f")' <<<"$json")
  local keep=() left=()
  for i in "${!pods[@]}"; do
    name=${pods[$i]} node=${node_of[${pods[$i]}]:-}
    # The name goes to kubectl, fabric-scan and scan-mark.sh: a Kubernetes
    # node name (DNS-1123) or nothing.
    if [ ${#node} -gt 253 ] || ! [[ $node =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ ]]; then
      fb_die "$FB_EXIT_INPUT" "pod $name runs on node $(fb_shown "$node"), not a Kubernetes node name: check the API server"
    fi
    if ! grep -qxF -- "$node" <<<"$in_pool"; then left+=("$name on $node"); continue; fi
    [ -z "${pod_on[$node]:-}" ] ||
      fb_die "$FB_EXIT_INPUT" "pods ${pod_on[$node]} and $name both run on node $node: a scan wants one worker per node (the StatefulSet's pod anti-affinity), fix -l or the placement"
    pod_on[$node]=$name
    keep+=("$i")
  done
  [ ${#left[@]} -eq 0 ] || fb_info "not in pool $pool, not scanned: ${left[*]:0:12}$([ ${#left[@]} -le 12 ] || echo " and $((${#left[@]} - 12)) more")"
  local empty=()
  while IFS= read -r node; do
    [ -z "$node" ] || [ -n "${pod_on[$node]:-}" ] || empty+=("$node")
  done <<<"$in_pool"
  [ ${#empty[@]} -eq 0 ] || fb_info "${#empty[@]} node(s)${pool:+ of pool $pool} without a worker, not scanned: ${empty[*]:0:12}$([ ${#empty[@]} -le 12 ] || echo " and more"): scale the workers (replicas) to cover them"
  [ ${#keep[@]} -ge 2 ] ||
    fb_die "$FB_EXIT_SKIPPED" "skipped: ${#keep[@]} worker(s) on nodes${pool:+ of pool $pool}, a scan needs two: scale the workers or check --pool and -l"
  local p=() h=() g=() f=()
  for i in "${keep[@]}"; do
    p+=("${pods[$i]}") h+=("${hosts[$i]}") g+=("${gpus[$i]}") f+=("${fabrics[$i]}") node_names+=("${node_of[${pods[$i]}]}")
  done
  pods=("${p[@]}") hosts=("${h[@]}") gpus=("${g[@]}") fabrics=("${f[@]}")
}
node_names=() topo=""
[ "$subcommand" != scan ] || scan_nodes
pod0=${pods[0]}

# Fabric: told, else what the pods were deployed with.
fabric=${FB_OPT_FABRIC:-${fabrics[0]:-}}
fabric=${fabric:-none}
fb_set_env "$fabric"
# Where the pods' wiring came from, recorded in the result.
runtime_source=${runtime_source:-fabric-bench:$fabric}

if [ -z "$slots" ]; then
  slots=${gpus[0]:-0}
  fb_is_uint "$slots" && [ "$slots" -ge 1 ] || slots=1
fi
# The context as the default label: fb_label_from maps what a label cannot
# hold ("..", "a/b"), no context at all is "kubernetes".
context=""
[ -n "$FB_OPT_CLUSTER_FROM" ] || context=$(k config current-context 2>/dev/null) || context=""
cluster=$(fb_cluster "$context" kubernetes)

if [ -n "$rsh" ]; then
  FB_SSH=("$rsh")
else
  FB_SSH=(ssh -p "$ssh_port" -i "$ssh_key" -o BatchMode=yes -o StrictHostKeyChecking=no
    -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5)
fi
stamp=$(fb_utc_stamp)
fb_info "${#pods[@]} pods ready (${pods[*]}), $slots ranks each, fabric $fabric; mpirun in $pod0"
[ "$subcommand" != scan ] || fb_info "scan ($scan_mode) of nodes ${node_names[*]}"

# ---- in the first pod: a private directory, the checks, then the run ----------------
# The directory comes from mktemp -d in the pod, under --workdir or the
# pod's TMPDIR: never a name another user of the pod could make first. Every
# value reaches the pod's shell as an argument ($1, $2), never inside the
# command string.
# shellcheck disable=SC2016 # expands in the pod's shell
mkjob='d=${1:-${TMPDIR:-/tmp}}; mkdir -p -- "$d" && mktemp -d "$d/$2"'
job_name=fabric-bench-$stamp-$coll.XXXXXX
in_pod=(-n "$ns" exec "$pod0" -c "$container" --)
if [ "$FB_DRY_RUN" = 1 ]; then
  echo "+ $(fb_quote "${kubectl[@]}" "${in_pod[@]}" sh -c "$mkjob" sh "$workdir" "$job_name")"
  job=${workdir:-/tmp}/$job_name
else
  job=$(k "${in_pod[@]}" sh -c "$mkjob" sh "$workdir" "$job_name" </dev/null 2>"$FB_LAUNCH_ERR") ||
    fb_die "$FB_EXIT_RUNTIME" "cannot make a directory in pod $pod0 ($(head -c 200 "$FB_LAUNCH_ERR" | tr '\n' ' ')): check --workdir and the container (-c $container)"
  if [[ $job != /*/"fabric-bench-$stamp-$coll".?????? ]] || fb_has_ctl "$job"; then
    fb_die "$FB_EXIT_RUNTIME" "mktemp -d in pod $pod0 gave $(fb_shown "$job"), not a directory under ${workdir:-its TMPDIR}: check the container's mktemp"
  fi
fi
FB_HOSTS=("${hosts[@]}") FB_SLOTS=$slots FB_BIND=$FB_OPT_BIND FB_IFACE=$FB_OPT_IFACE FB_SSH_WAIT=$ssh_wait
FB_WORKDIR=$job FB_RESULT=$job/$stamp-$coll.json FB_LOG=$job/$stamp-$coll.log
pod_bin=${pod_bin:-$pod_root/bin}
FB_RANK_SH=$pod_root/launch/rank.sh FB_COLL=$pod_bin/fabric-coll
if [ "$subcommand" = probe ]; then
  FB_COLL=$pod_bin/fabric-rdma FB_NCCL_LOG=0
  probe_args "$@"
else
  FB_COLL_ARGS=("$@" --cluster "$cluster" --runtime-source "$runtime_source")
fi
FB_MPIRUN_EXTRA=("${FB_OPT_MPIRUN[@]+"${FB_OPT_MPIRUN[@]}"}")
local_dir=$FB_OPT_RESULTS/$cluster
if [ "$subcommand" = scan ]; then
  FB_SCAN=$pod_bin/fabric-scan FB_NODE_NAMES=("${node_names[@]}")
  FB_SCAN_ARGS=(--mode "$scan_mode" --cluster "$cluster")
  [ "$racks" = 0 ] || FB_SCAN_ARGS+=(--topology "$job/nodes.json" --rack-label "$rack_label")
  FB_SCAN_ARGS+=("$@")
fi

# ship SCRIPT NAME: copies a generated script into the job's directory.
# shellcheck disable=SC2016 # expands in the pod's shell
ship() {
  local to=(-n "$ns" exec -i "$pod0" -c "$container" -- sh -c 'cat >"$1"' sh "$job/$2")
  fb_show_script "$2 (in $pod0)" < <(printf '%s\n' "$1")
  if [ "$FB_DRY_RUN" = 1 ]; then
    echo "+ $(fb_quote "${kubectl[@]}" "${to[@]}") < $2"
    return 0
  fi
  printf '%s\n' "$1" | k "${to[@]}" ||
    fb_die "$FB_EXIT_RUNTIME" "kubectl exec into $pod0 failed: check the pod and container names (-c $container)"
}
ship "$(fb_preflight_script)" preflight.sh
if [ "$subcommand" = scan ]; then
  [ "$racks" = 0 ] || ship "$(cat "$topo")" nodes.json
  ship "$(fb_scan_run_script)" run.sh
else
  ship "$(fb_run_script)" run.sh
fi
rc=0
kx "${in_pod[@]}" bash "$job/preflight.sh" || rc=$?
case $rc in
  0) ;;
  "$FB_EXIT_LAUNCH" | "$FB_EXIT_TIMEOUT") exit "$rc" ;; # the checks' own one line
  *) fb_die "$FB_EXIT_RUNTIME" "the checks did not run in pod $pod0 (kubectl exec exit $rc): check the pod, the container (-c $container) and bash in its image" ;;
esac
kx "${in_pod[@]}" bash "$job/run.sh" || rc=$?

# ---- results back, verdict ----------------------------------------------------------
result=$local_dir/$stamp-$coll.json
if [ "$FB_DRY_RUN" = 1 ]; then
  kx -n "$ns" cp -c "$container" "$pod0:$FB_RESULT" "$result"
  kx -n "$ns" cp -c "$container" "$pod0:$FB_LOG" "$local_dir/$stamp-$coll.log"
  kx "${in_pod[@]}" rm -rf -- "$job"
  exit 0
fi
mkdir -p "$local_dir" || fb_die "$FB_EXIT_INPUT" "cannot create $local_dir: choose another --results"
k -n "$ns" cp -c "$container" "$pod0:$FB_RESULT" "$result" >/dev/null 2>&1 || rm -f "$result"
k -n "$ns" cp -c "$container" "$pod0:$FB_LOG" "$local_dir/$stamp-$coll.log" >/dev/null 2>&1 || true
if [ ! -s "$result" ]; then
  fb_die "$(( rc ? rc : FB_EXIT_RUNTIME ))" "the run wrote no result (exit $rc): see $local_dir/$stamp-$coll.log"
fi
fb_info "result: $result"
if [ "$subcommand" = scan ]; then
  v=$rc
  # Under orte_abort_on_non_zero_status 0 mpirun exits 0 although rank 0
  # exits 24, and a lost node can end it with MPI_Abort after fabric-scan
  # wrote its verdict: the results say what it found.
  if jq -e '.summary.verdict == "suspects"' "$result" >/dev/null 2>&1; then
    [ "$rc" -eq 0 ] || [ "$rc" -eq 24 ] || fb_info "the run exited $rc; its results name suspects"
    v=24
  fi
  jq -r '"scan \(.summary.verdict): \(.summary.passed) pass, \(.summary.slow) slow, \(.summary.failed) failed, \(.summary.untested) untested"
         + (if (.suspects.nodes | length) > 0 then "; suspects: " + (.suspects.nodes | join(", ")) else "" end)' "$result" 2>/dev/null |
    sed "s/^/$FB_PROG: /"
  k "${in_pod[@]}" rm -rf -- "$job" </dev/null >/dev/null 2>&1
  exit "$v"
fi
[ "$rc" -ne 0 ] && fb_info "the run exited $rc; judging what was measured"
if report=$(fb_report_bin); then
  "$report" check "$result" "${FB_OPT_REPORT[@]+"${FB_OPT_REPORT[@]}"}"
  v=$?
else
  # No fabric-report here: the image has one.
  k "${in_pod[@]}" "$pod_bin/fabric-report" check "$FB_RESULT" "${FB_OPT_REPORT[@]+"${FB_OPT_REPORT[@]}"}"
  v=$?
  [ "$v" -ne 126 ] && [ "$v" -ne 127 ] || v=$rc
fi
# The result and log are here now; a run that failed keeps its directory.
k "${in_pod[@]}" rm -rf -- "$job" </dev/null >/dev/null 2>&1
exit "$v"
