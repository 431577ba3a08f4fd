# Free GPU nodes, the rule fabric-doctor applies too (docs/clusters.md
# "Benchmark under the delivered wiring"):
#
#   jq -rn --slurpfile nodes NODES.json --slurpfile pods PODS.json \
#      --argjson need N -f launch/capacity.jq
#
# NODES.json is `kubectl get nodes -o json`, PODS.json `kubectl get pods -A
# -o json`, N the GPUs one worker asks for (at least 1). A node is free when
# .spec.unschedulable is not true, its Ready condition is True, it has no
# NoSchedule or NoExecute taint but nvidia.com/gpu's, and its allocatable
# nvidia.com/gpu less the GPUs of the pods bound to it (per container the
# larger of request and limit, summed) is at least N; pods that are Succeeded
# or Failed hold none. Every other pod given holds its GPUs: the caller
# leaves out the pods that are its own run's (the launcher: the pods it
# selects; fabric-doctor: fabric-bench's workers).
#
# Prints one line per node with GPUs, "NAME<TAB>free" or "NAME<TAB>why",
# then "-<TAB>K node(s) without GPUs" when there are such.

def qty: if . == null then 0 else tostring | tonumber? // 0 end;
def pod_gpus: [.spec.containers[]? | [.resources.requests["nvidia.com/gpu"], .resources.limits["nvidia.com/gpu"]]
               | map(qty) | max] | add // 0;
def holds_gpus: .status.phase | IN("Succeeded", "Failed") | not;

([$pods[0].items[]? | select(.spec.nodeName != null and holds_gpus)]
 | group_by(.spec.nodeName) | map({key: .[0].spec.nodeName, value: (map(pod_gpus) | add)}) | from_entries) as $used
| ([$need, 1] | max) as $n
| [$nodes[0].items[]? | {name: .metadata.name, node: .,
     gpus: (.status.allocatable["nvidia.com/gpu"] | qty)}] as $all
| ($all[] | select(.gpus > 0) | .name as $name | .node as $node
   | ([$node.spec.taints[]? | select((.effect | IN("NoSchedule", "NoExecute")) and .key != "nvidia.com/gpu")]) as $taints
   | ([$node.status.conditions[]? | select(.type == "Ready")][0].status // "Unknown") as $ready
   | (.gpus - ($used[$name] // 0)) as $free
   | "\($name)\t" +
     if $node.spec.unschedulable == true then "cordoned"
     elif $ready != "True" then "not Ready (\($ready))"
     elif ($taints | length) > 0 then "tainted \($taints | map("\(.key)\(if .value then "=" + .value else "" end):\(.effect)") | join(", "))"
     elif $free < $n then "\($free) of \(.gpus) GPUs free, needs \($n)"
     else "free" end),
  ([$all[] | select(.gpus == 0)] | length | select(. > 0) | "-\t\(.) node\(if . == 1 then "" else "s" end) without GPUs")
