# Derives fabric-bench workers from a deployed artifact's pod template
# (launch/kubectl.sh --from, docs/clusters.md "Benchmark under the delivered
# wiring"). Input: the artifact as `kubectl get KIND NAME -o json` prints it.
#
#   $mode "info"      what the launcher checks before it derives: the worker
#                     container, its GPUs, the wiring annotations
#   $mode "manifest"  a List: the headless Service and the StatefulSet
#
# Arguments (jq --arg): mode, job (--from-job, "" for none), container (-c),
# and for "manifest": name (of the StatefulSet and Service), instance, ns,
# source (the runtime-source annotation), image, command (the entry point),
# cpu, memory, gpus ("" for none), port (sshd), replicas.
#
# The template is copied whole but for the marks controllers put on pods;
# only the worker's image, command, args, resources (all but cpu, memory,
# ephemeral storage and GPUs kept) and probes are replaced, the pod's
# restartPolicy becomes Always (a StatefulSet allows no other) and a Job's
# activeDeadlineSeconds goes, and
# fabric-bench's volumes, mounts, environment, port, labels, annotation and
# one-pod-per-node anti-affinity are added beside what is there. A failure is
# error("one line"), which the launcher prints.

def fail($msg): error($msg);
def ident: "\(.kind)/\(.metadata.name)";

# ---- the pod template -----------------------------------------------------------
# Trainer v2 runtimes and JobSets: the replicated job named --from-job, else
# the one named node, else the only one.
def replicated_job($rjs; $what):
  ($rjs | map(.name) | join(", ")) as $names
  | if $job != "" then
      (($rjs | map(select(.name == $job)))[0]
        // fail("--from-job \($job): \($what) has no replicated job of that name, only \($names)"))
    elif ($rjs | map(select(.name == "node")) | length) > 0 then ($rjs | map(select(.name == "node")))[0]
    elif ($rjs | length) == 1 then $rjs[0]
    else fail("\($what) has the replicated jobs \($names) and none named node: pick one with --from-job NAME")
    end;

def replica_template($specs; $what):
  (($specs.Worker // $specs.Master // fail("\($what) has neither a Worker nor a Master replica spec")).template)
  // fail("\($what): its Worker/Master replica spec has no template");

# Labels and annotations controllers and the API server put on pods: they
# describe one pod or tie it to its job (a Job's controller-uid, a JobSet's
# headless Service, a Volcano or Kubeflow PodGroup), not the wiring. Dropped
# from every template, so the derived pods join nothing of the original job.
def controller_label:
  test("^(pod-template-hash|controller-revision-hash|controller-uid|job-name|statefulset\\.kubernetes\\.io/pod-name|apps\\.kubernetes\\.io/pod-index|batch\\.kubernetes\\.io/.*|jobset\\.sigs\\.k8s\\.io/.*|training\\.kubeflow\\.org/.*|volcano\\.sh/.*)$");
def status_annotation:
  test("^(kubectl\\.kubernetes\\.io/last-applied-configuration|k8s\\.v1\\.cni\\.cncf\\.io/networks?-status|batch\\.kubernetes\\.io/.*|jobset\\.sigs\\.k8s\\.io/.*|scheduling\\.k8s\\.io/group-name|volcano\\.sh/.*)$");
def without_controller_marks:
  .metadata = ((.metadata // {})
    | .labels = ((.labels // {}) | with_entries(select(.key | controller_label | not)))
    | .annotations = ((.annotations // {}) | with_entries(select(.key | status_annotation | not))));
def token_volume: .name | test("^kube-api-access-");

def running_pod_template:
  ([.spec.volumes[]? | select(token_volume) | .name]) as $token
  | def no_token: if .volumeMounts then .volumeMounts |= map(select(.name as $n | $token | index($n) | not)) else . end;
  {metadata: ({labels: ((.metadata.labels // {}) | with_entries(select(.key | controller_label | not))),
               annotations: ((.metadata.annotations // {}) | with_entries(select(.key | status_annotation | not)))}),
   spec: (.spec
     | del(.nodeName, .hostname, .subdomain, .priority, .serviceAccount, .ephemeralContainers)
     | if .volumes then .volumes |= map(select(token_volume | not)) else . end
     | .containers |= map(no_token)
     | if .initContainers then .initContainers |= map(no_token) else . end)};

def pod_template:
  ident as $what
  | (if .kind == "ClusterTrainingRuntime" or .kind == "TrainingRuntime" then
       replicated_job(.spec.template.spec.replicatedJobs // fail("\($what) has no spec.template.spec.replicatedJobs"); $what)
       | .template.spec.template
     elif .kind == "JobSet" then
       replicated_job(.spec.replicatedJobs // fail("\($what) has no spec.replicatedJobs"); $what) | .template.spec.template
     elif .kind == "PyTorchJob" then replica_template(.spec.pytorchReplicaSpecs // {}; $what)
     elif .kind == "MPIJob" then replica_template(.spec.mpiReplicaSpecs // {}; $what)
     elif .kind == "CronJob" then .spec.jobTemplate.spec.template
     elif .kind == "Pod" then running_pod_template
     elif (.kind | IN("Deployment", "StatefulSet", "Job", "ReplicaSet", "DaemonSet")) then .spec.template
     else fail("kind \(.kind // "(none)") has no pod template fabric-bench knows: give a ClusterTrainingRuntime, TrainingRuntime, JobSet, PyTorchJob, MPIJob, Deployment, StatefulSet, Job, CronJob or Pod")
     end) as $t
  | if ($t.spec.containers // []) | length == 0 then fail("\($what) has no pod template with containers")
    else $t | without_controller_marks end;

# ---- the worker container -----------------------------------------------------------
def gpus_of: [.resources.limits["nvidia.com/gpu"], .resources.requests["nvidia.com/gpu"]
              | select(. != null) | tostring | tonumber] | max // 0;

# Index of the worker: -c NAME, else the one asking for GPUs, else one named
# node, pytorch or trainer, else the first.
def worker_index($c):
  .spec.containers as $cs
  | [range(0; $cs | length)] as $i
  | ([$i[] | select($cs[.].name == $c)]
     + [$i[] | select(($cs[.] | gpus_of) > 0)]
     + [$i[] | select($cs[.].name | IN("node", "pytorch", "trainer"))] + [0])[0];

# ---- info ------------------------------------------------------------------------------
def info:
  . as $obj
  | pod_template as $t
  | ($t | worker_index($container)) as $w
  | ($t.metadata.annotations // {}) as $a
  | {kind: .kind, name: .metadata.name, namespace: (.metadata.namespace // ""),
     generation: ((.metadata.generation // "-") | tostring),
     container: $t.spec.containers[$w].name,
     gpus: ($t.spec.containers[$w] | gpus_of),
     interfaces: $a["networking.gke.io/interfaces"],
     networks: $a["k8s.v1.cni.cncf.io/networks"]};

# ---- the manifest --------------------------------------------------------------------
# fabric-bench sets the worker's cpu, memory, ephemeral storage and GPUs;
# every other resource it asks for (EFA, RDMA VFs and host devices under
# whatever name the device plugin gives them, GKE network resources,
# hugepages, claims) is wiring and stays as the artifact asks for it.
def ours_to_set: IN("cpu", "memory", "ephemeral-storage", "nvidia.com/gpu");

def worker_resources:
  (if $gpus == "" then {} else {"nvidia.com/gpu": $gpus} end) as $g
  | ({cpu: $cpu, memory: $memory} + $g) as $ours
  | (.resources // {}) as $r
  | {requests: ($ours + (($r.requests // {}) | with_entries(select(.key | ours_to_set | not)))),
     limits: ($ours + (($r.limits // {}) | with_entries(select(.key | ours_to_set | not))))}
    + (if $r.claims then {claims: $r.claims} else {} end);

# A name not among $names: fb-NAME, fb-fb-NAME, ...
def fresh($names): . as $n | if ($names | index([$n])) then ("fb-" + $n) | fresh($names) else $n end;

def our_volumes:
  [{name: "ssh-key", secret: {secretName: "fabric-bench-ssh", defaultMode: 256}},
   {name: "dshm", emptyDir: {medium: "Memory", sizeLimit: "16Gi"}}];
def our_mounts:
  [{name: "ssh-key", mountPath: "/etc/fabric-bench/ssh", readOnly: true},
   {name: "dshm", mountPath: "/dev/shm"}];

# Adds fabric-bench's volumes and the worker's mounts of them: a volume of
# the same name and definition is shared, one of the same name and another
# definition stays and ours is renamed; a path the worker already mounts
# keeps the artifact's mount (and ours is not added).
def merge_volumes($w):
  ([.spec.containers[$w].volumeMounts[]?.mountPath]) as $paths
  | [our_mounts[] | select(.mountPath as $p | $paths | index([$p]) | not)] as $mounts
  | reduce (our_volumes[] | select(.name as $n | $mounts | map(.name) | index([$n]))) as $v (.;
      ([.spec.volumes[]?.name]) as $names
      | ((.spec.volumes // []) | map(select(.name == $v.name)))[0] as $same
      | (if $same == null or $same == $v then $v.name else ($v.name | fresh($names)) end) as $n
      | (if $same == $v then . else .spec.volumes = ((.spec.volumes // []) + [$v | .name = $n]) end)
      | .spec.containers[$w].volumeMounts = ((.spec.containers[$w].volumeMounts // [])
          + [$mounts[] | select(.name == $v.name) | .name = $n]));

def our_env: [{name: "FB_SSH_PORT", value: ($port | tostring)}, {name: "FB_SSH_SECRET_DIR", value: "/etc/fabric-bench/ssh"}];

def replace_worker($w):
  .spec.containers[$w] |= (
    .image = $image
    | .command = [$command]
    | del(.args, .livenessProbe, .startupProbe)
    | .resources = worker_resources
    | .env = ([.env[]? | select(.name | IN("FB_SSH_PORT", "FB_SSH_SECRET_DIR") | not)] + our_env)
    | .ports = ((.ports // []) + (if [.ports[]?.containerPort] | index([$port]) then []
                                  else [{name: "fb-ssh", containerPort: $port, protocol: "TCP"}] end))
    | .readinessProbe = {tcpSocket: {port: $port}, periodSeconds: 5});

def our_labels: {"app.kubernetes.io/name": "fabric-bench", "app.kubernetes.io/component": "worker",
                 "app.kubernetes.io/instance": $instance};

def derived_template:
  pod_template
  | worker_index($container) as $w
  | replace_worker($w)
  | merge_volumes($w)
  | .metadata = ((.metadata // {}) | {labels: ((.labels // {}) + our_labels),
                                      annotations: ((.annotations // {}) + {"fabric-bench/runtime-source": $source})})
  | .spec.restartPolicy = "Always"
  # A StatefulSet's pods run until deleted: a Job's deadline is refused.
  | del(.spec.activeDeadlineSeconds)
  | .spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution += [
      {topologyKey: "kubernetes.io/hostname", labelSelector: {matchLabels: our_labels}}];

def manifest:
  {apiVersion: "v1", kind: "List", items: [
    {apiVersion: "v1", kind: "Service",
     metadata: {name: $name, namespace: $ns, labels: our_labels},
     spec: {clusterIP: "None", publishNotReadyAddresses: true, selector: our_labels,
            ports: [{name: "ssh", port: $port, targetPort: $port}]}},
    {apiVersion: "apps/v1", kind: "StatefulSet",
     metadata: {name: $name, namespace: $ns, labels: our_labels,
                annotations: {"fabric-bench/runtime-source": $source}},
     spec: {replicas: $replicas, serviceName: $name, podManagementPolicy: "Parallel",
            selector: {matchLabels: our_labels}, template: derived_template}}]};

# ---- privilege ----------------------------------------------------------------------
# Every field of the derived pods that reaches past the container: what the
# Pod Security Standards' baseline profile refuses (host namespaces and
# ports, hostPath volumes, privileged and host-process containers, added
# capabilities beyond its default set, unconfined seccomp, AppArmor or
# SELinux, an unmasked /proc, unsafe sysctls), what its restricted profile
# refuses of the same kind (running as user 0, privilege escalation asked
# for), and a service account other than the namespace's default (its API
# rights come with every pod). IPC_LOCK is the fabric's own need (RDMA
# registers, so pins, memory) and is not listed. Input: the manifest (a
# List); output: one line per field, its values shown as given.
def baseline_caps: ["AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"];
def fabric_caps: ["IPC_LOCK"];
def safe_sysctls: ["kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                   "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                   "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                   "net.ipv4.tcp_keepalive_probes"];
def selinux_types: ["", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"];
def shown: tostring | gsub("[\u0000-\u001f\u007f]"; "?") | if length > 120 then .[0:117] + "..." else . end;

# What a pod's or a container's securityContext grants, as "FIELD: VALUE".
def context_grants:
  (.seccompProfile.type | select(. == "Unconfined") | "seccompProfile.type: Unconfined"),
  (.appArmorProfile.type | select(. == "Unconfined") | "appArmorProfile.type: Unconfined"),
  (.seLinuxOptions // {} | select((.type // "" | IN(selinux_types[]) | not) or .user or .role)
     | "seLinuxOptions: \(tojson | shown)"),
  (.windowsOptions.hostProcess | select(. == true) | "windowsOptions.hostProcess: true"),
  (.runAsUser | select(. == 0) | "runAsUser: 0 (root)");
def container_grants:
  (.securityContext // {}) as $s
  | ($s.privileged | select(. == true) | "securityContext.privileged: true"),
    ($s.allowPrivilegeEscalation | select(. == true) | "securityContext.allowPrivilegeEscalation: true"),
    ([$s.capabilities.add[]? | tostring | select(ascii_upcase | ltrimstr("CAP_") | IN((baseline_caps + fabric_caps)[]) | not)]
      | select(length > 0) | "securityContext.capabilities.add: \(join(", ") | shown)"),
    ($s.procMount | select(. == "Unmasked") | "securityContext.procMount: Unmasked"),
    ($s | context_grants | "securityContext.\(.)"),
    ([.ports[]? | select(.hostPort != null and .hostPort != 0) | .hostPort | tostring]
      | select(length > 0) | "ports: hostPort \(join(", "))");

def privileges:
  [.items[] | select(.kind == "StatefulSet") | .spec.template] | first // {}
  | .spec as $p
  | (.metadata.annotations // {}) as $a
  | ([($p.initContainers // [])[] | {kind: (if .restartPolicy == "Always" then "sidecar" else "init container" end), c: .}]
     + [($p.containers // [])[] | {kind: "container", c: .}]) as $all
  | [ "hostNetwork", "hostPID", "hostIPC" | select($p[.] == true) | "pod: \(.): true" ]
    + [ ($p.serviceAccountName // $p.serviceAccount // "") | select(. != "" and . != "default")
        | "pod: serviceAccountName: \(shown) (its API rights come with every pod)" ]
    + [ $p.volumes[]? | select(.hostPath) | .name as $v
        | ([$all[] | .c as $c | $c.volumeMounts[]? | select(.name == $v)
            | "\($c.name) at \(.mountPath)\(if .readOnly then " (read-only)" else "" end)"] | join(", ")) as $by
        | "pod: volume \($v | shown): hostPath \(.hostPath.path | shown)\(if $by != "" then ", mounted by \($by | shown)" else "" end)" ]
    + [ $p.securityContext // {} | context_grants | "pod: securityContext.\(.)" ]
    + [ $p.securityContext.sysctls[]? | select(.name | IN(safe_sysctls[]) | not)
        | "pod: securityContext.sysctls: \(.name | shown)=\(.value | shown)" ]
    + [ $a | to_entries[] | select((.key | startswith("container.apparmor.security.beta.kubernetes.io/")) and .value == "unconfined")
        | "pod: annotation \(.key | shown): unconfined" ]
    + [ $all[] | .kind as $k | .c as $c | $c | container_grants | "\($k) \($c.name | shown): \(.)" ];

if $mode == "info" then info elif $mode == "privileges" then privileges else manifest end
