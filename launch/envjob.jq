# The env launch's workload as launch/kubectl.sh --launcher env applies it.
# Input: a List, either a rendered env overlay (manifests/envjob,
# manifests/jobset or manifests/pytorchjob/overlays-env: an Indexed Job,
# JobSet or PyTorchJob) or the derived workers of --from (launch/derive.jq's
# headless Service and StatefulSet, which become an Indexed Job here: the
# same pod template, its sshd, key and probe gone).
#
# Arguments: container (-c), ns, pods (processes, one per pod), port
# (NCCL's bootstrap), deadline (the job's activeDeadlineSeconds), command
# and args (the worker's, JSON arrays), env (JSON array of {name, value},
# set over the worker's own), secret (--rawfile: the watchdog's per-job
# secret, into the Secret fabric-bench-job).
#
# Output: the List to apply, with the Secret first. A failure is
# error("one line"), which the launcher prints.

def fail($msg): error($msg);
def workload_kind: IN("Job", "JobSet", "PyTorchJob");

# ---- the derived StatefulSet as an Indexed Job ----------------------------------------
def without_ssh:
  del(.readinessProbe)
  | .env = [.env[]? | select(.name | IN("FB_SSH_PORT", "FB_SSH_SECRET_DIR") | not)]
  | .ports = [.ports[]? | select(.name != "fb-ssh")]
  | .volumeMounts = [.volumeMounts[]? | select(.mountPath != "/etc/fabric-bench/ssh")];
def env_pod_spec($svc):
  ([.containers[] | select(.name == $container) | .volumeMounts[]? | select(.mountPath == "/etc/fabric-bench/ssh") | .name]) as $ssh
  | .volumes = [.volumes[]? | select(.name as $n | $ssh | index([$n]) | not)]
  | .containers |= map(if .name == $container then without_ssh else . end);
def sts_as_job($svc):
  {apiVersion: "batch/v1", kind: "Job",
   metadata: (.metadata | {name, namespace, labels, annotations}),
   spec: {completionMode: "Indexed", completions: .spec.replicas, parallelism: .spec.replicas,
          backoffLimit: 0, ttlSecondsAfterFinished: 86400,
          template: (.spec.template | .spec |= (env_pod_spec($svc) | .subdomain = $svc))}};
def from_workers:
  if any(.items[]; .kind == "StatefulSet") then
    .items |= map(
      if .kind == "StatefulSet" then sts_as_job(.metadata.name)
      elif .kind == "Service" then .spec.ports = [{name: "bootstrap", port: $port, targetPort: $port}]
      else . end)
  else . end;

# ---- the worker container: command, variables, the Secret -------------------------------
def set_env($more): .env = ([.env[]? | select(.name as $n | $more | map(.name) | index([$n]) | not)] + $more);
def secret_volume: {name: "job-secret", secret: {secretName: "fabric-bench-job", defaultMode: 256}};
def worker($more; $pname):
  .command = $command | .args = $args | del(.readinessProbe)
  | set_env([{name: "FB_JOB_SECRET_FILE", value: "/etc/fabric-bench/job/secret"}] + $more + $env)
  | .ports = ([.ports[]? | select(.name != "bootstrap" and .name != "pytorchjob-port" and .containerPort != $port)]
              + [{name: $pname, containerPort: $port}])
  | .volumeMounts = ([.volumeMounts[]? | select(.mountPath != "/etc/fabric-bench/job")]
                     + [{name: "job-secret", mountPath: "/etc/fabric-bench/job", readOnly: true}]);
def pod_template($more; $pname):
  if ([.spec.containers[]? | select(.name == $container)] | length) == 0 then
    fail("the workload's pods have no container \($container): pass -c with the worker container's name")
  else
    .spec.containers |= map(if .name == $container then worker($more; $pname) else . end)
    | .spec.volumes = ([.spec.volumes[]? | select(.name != "job-secret")] + [secret_volume])
    | .spec.restartPolicy = "Never"
  end;

# MASTER_ADDR: pod 0 by its name under the headless Service (an Indexed
# Job's <job>-0.<subdomain>, a JobSet's <jobset>-<replicated job>-0-0.<subdomain>);
# a PyTorchJob's operator sets it itself.
def job_spec($name; $more):
  .completions = $pods | .parallelism = $pods | .backoffLimit = 0 | .completionMode = "Indexed"
  | .activeDeadlineSeconds = $deadline
  | (.template.spec.subdomain // $name) as $sub
  | .template.spec.subdomain = $sub
  | .template |= pod_template([{name: "WORLD_SIZE", value: ($pods | tostring)},
                               {name: "MASTER_ADDR", value: "\($name)-0.\($sub)"},
                               {name: "MASTER_PORT", value: ($port | tostring)}] + $more; "bootstrap");
def workload:
  .metadata.name as $name
  | if .kind == "Job" then .spec |= job_spec($name; [])
    elif .kind == "JobSet" then
      if (.spec.replicatedJobs | length) != 1 then fail("JobSet \($name) has \(.spec.replicatedJobs | length) replicated jobs; the env launch runs one, a pod per process")
      else
        (.spec.network.subdomain // $name) as $sub
        | .spec.network = ((.spec.network // {}) + {enableDNSHostnames: true, subdomain: $sub})
        | .spec.replicatedJobs[0] |= (.replicas = 1 | .name as $rj
            | .template.spec |= (.template.spec.subdomain = $sub | job_spec("\($name)-\($rj)-0"; [])))
      end
    else
      .spec.runPolicy = ((.spec.runPolicy // {}) + {activeDeadlineSeconds: $deadline, backoffLimit: 0})
      | .spec.pytorchReplicaSpecs.Master.replicas = 1
      | .spec.pytorchReplicaSpecs.Worker.replicas = ($pods - 1)
      | .spec.pytorchReplicaSpecs |= with_entries(.value.restartPolicy = "Never" | .value.template |= pod_template([]; "pytorchjob-port"))
    end;

def namespaced: if .kind == "Namespace" then .metadata.name = $ns else .metadata.namespace = $ns end;

from_workers
| ([.items[] | select(.kind | workload_kind)] | length) as $n
| if $n != 1 then fail("the env workload has \($n) Jobs, JobSets or PyTorchJobs; it needs one")
  else
    # The Namespace before the Secret that goes into it.
    ([.items[] | select(.kind == "Namespace")]) as $nss
    | .items |= ($nss
                 + [{apiVersion: "v1", kind: "Secret", type: "Opaque",
                     metadata: {name: "fabric-bench-job", labels: {"app.kubernetes.io/name": "fabric-bench"}},
                     stringData: {secret: $secret}}]
                 + map(select(.kind != "Namespace" and ((.kind == "Secret" and .metadata.name == "fabric-bench-job") | not))
                       | if .kind | workload_kind then workload else . end)
                 | map(namespaced))
  end
