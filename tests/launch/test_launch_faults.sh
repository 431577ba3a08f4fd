#!/usr/bin/env bash
# The launchers against hosts that fail, on network-namespace hosts "fbf"
# (scripts/testhosts.sh): a worker that never comes up (its sshd gone), an
# sshd that accepts and never answers (stopped with SIGSTOP), a host name
# that does not resolve, a name service that does not answer, an API server
# that stalls. Each run must end within its bound with the documented exit
# code (docs/exit-codes.md: 6 hosts not ready, 8 a wait expired) and one
# line naming the host or pod.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/launch/common.sh
. "$(dirname "$0")/common.sh"

BM=$FB_ROOT/launch/baremetal.sh
KC=$FB_ROOT/launch/kubectl.sh
STANDIN=$FB_ROOT/tests/launch/kubectl-standin.sh
TH=$FB_ROOT/scripts/testhosts.sh
RES=$T_DIR/results
export FBL_STATE=$T_DIR/state FBL_SET=fbf FBL_COUNT=3
mkdir -p "$FBL_STATE"

# ends NAME CODE MAX_S REGEX CMD...: CMD exits CODE within MAX_S seconds with
# one line on stderr matching REGEX. A launcher that hangs is stopped well
# after the bound and fails the case.
ends() {
  local name=$1 code=$2 max=$3 re=$4 start=$SECONDS took
  shift 4
  rm -f "$FBL_STATE"/*
  run timeout -k 5 $((max + 60)) "$@"
  took=$((SECONDS - start))
  if [ "$T_RC" -eq "$code" ] && [ "$took" -le "$max" ] && grep -Eq -- "$re" "$T_ERR"; then
    ok "$name: exit $code after ${took}s"
  else
    not_ok "$name" "exit $T_RC after ${took}s, wanted $code within ${max}s and /$re/: $(head -c 400 "$T_ERR")"
  fi
  expect_one_line "$name: one line" "$T_ERR"
}

# ---- an API server that accepts and never answers (no hosts needed) ------------------
FBL_SCENARIO=hang ends "kubectl: API server stalls" 8 12 \
  'kubectl get pods did not answer within 4s: check the API server' \
  "$KC" --kubectl "$STANDIN" --wait 4 all_reduce

# ---- real hosts ------------------------------------------------------------------------
hosts_up fbf 3 "launcher faults on namespace hosts"
key=(--ssh-port 2222 --ssh-key "$dir/id_ed25519")
bm=("$TH" exec fbf 1 "$BM")
kc=("$KC" --kubectl "$STANDIN" --pod-root "$FB_ROOT" --pod-bin "$FB_BIN" "${key[@]}" --bind none
  --results "$RES" --workdir "$T_DIR/pod-work")
sweep=(all_reduce --backend mpi -b 1K -e 1K -n 1 -w 0)

# Control: with every host healthy both launchers get past their checks.
run timeout 120 "${bm[@]}" --hosts fbf1,fbf2,fbf3 "${key[@]}" --ssh-wait 10 --bind none \
  --results "$RES" -- "${sweep[@]}"
if grep -q 'preflight: 3 hosts resolve and answer ssh' "$T_OUT" && [ "$T_RC" -ne 6 ] && [ "$T_RC" -ne 8 ]; then
  ok "control: healthy hosts pass the bare-metal checks"
else
  not_ok "control: healthy hosts pass the bare-metal checks" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
rm -f "$FBL_STATE"/*
FBL_SCENARIO=probe run timeout 120 "${kc[@]}" --wait 20 -- "${sweep[@]}"
if grep -q '3 pods ready' "$T_OUT" && [ "$T_RC" -ne 6 ] && [ "$T_RC" -ne 8 ]; then
  ok "control: pods whose sshd accepts are Ready, the run starts"
else
  not_ok "control: pods whose sshd accepts are Ready, the run starts" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi

# ---- a host name that does not resolve ------------------------------------------------------
ends "bare metal: host name that does not resolve" 6 10 \
  '^baremetal: host name nohost-fbf does not resolve on fbf1: give resolvable names' \
  "${bm[@]}" --hosts fbf1,nohost-fbf "${key[@]}" --ssh-wait 5 all_reduce
FBL_SCENARIO=badname ends "kubectl: pod host name that does not resolve" 6 15 \
  '^kubectl.sh: host name nohost-fbf does not resolve on fbf1' \
  "${kc[@]}" --wait 5 --ssh-wait 5 -- "${sweep[@]}"

# ---- a name service that does not answer ------------------------------------------------------
# A DNS server on fbf3 that takes queries and never replies; fbf1 asks it.
"$TH" exec fbf 3 /usr/bin/python3 -c '
import os, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 53))
open(sys.argv[1], "w").write(str(os.getpid()))
time.sleep(600)' "$T_DIR/dns.pid" >/dev/null 2>&1 &
on_exit "kill \$(cat '$T_DIR/dns.pid' 2>/dev/null) 2>/dev/null"
# The pid is written once the socket is bound: until then fbf3 refuses the
# query at once ("does not resolve", exit 6, not the silence this case is
# about). Python's start in a namespace can take seconds on busy cores.
for _ in $(seq 1 300); do [ -s "$T_DIR/dns.pid" ] && break; sleep 0.1; done
printf 'nameserver 10.77.0.3\noptions timeout:5 attempts:2\n' >/etc/netns/fbf1/resolv.conf
ends "bare metal: name service that does not answer" 8 10 \
  '^baremetal: host name silent-dns.example did not resolve within 3s on fbf1: the name service does not answer' \
  "${bm[@]}" --hosts fbf1,silent-dns.example "${key[@]}" --ssh-wait 3 all_reduce
rm -f /etc/netns/fbf1/resolv.conf
kill "$(cat "$T_DIR/dns.pid")" 2>/dev/null

# ---- an sshd that accepts and never answers -----------------------------------------------------
# Stopped, sshd still accepts TCP connections (the kernel queues them), so a
# readinessProbe keeps the pod Ready and only a bounded ssh notices.
sshd2=$(cat "$dir/sshd.2.pid")
kill -STOP "$sshd2"
on_exit "kill -CONT $sshd2 2>/dev/null"
ends "bare metal: sshd stopped on fbf2" 6 12 \
  '^baremetal: ssh from fbf1 to fbf2 failed for 4s \((no answer within the bound|.*banner exchange.*)\): check sshd on fbf2' \
  "${bm[@]}" --hosts fbf1,fbf2,fbf3 "${key[@]}" --ssh-wait 4 all_reduce
# A remote shell with no timeout of its own: the launcher's bound still holds.
printf '#!/bin/sh\nexec ssh -p 2222 -i %s -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "$@"\n' \
  "$dir/id_ed25519" >"$T_DIR/rsh-notimeout"
chmod +x "$T_DIR/rsh-notimeout"
ends "bare metal: sshd stopped, remote shell without timeouts" 6 12 \
  '^baremetal: ssh from fbf1 to fbf2 failed for 4s \(no answer within the bound\): check sshd on fbf2' \
  "${bm[@]}" --hosts fbf1,fbf2 --rsh "$T_DIR/rsh-notimeout" --ssh-wait 4 all_reduce
FBL_SCENARIO=probe ends "kubectl: sshd stopped in pod fabric-bench-1 (still Ready)" 6 20 \
  '^kubectl.sh: ssh from fbf1 to fbf2 failed for 4s .*: check sshd on fbf2' \
  "${kc[@]}" --wait 10 --ssh-wait 4 -- "${sweep[@]}"
kill -CONT "$sshd2"

# ---- a worker that never comes up: its sshd is gone --------------------------------------------
kill "$(cat "$dir/sshd.3.pid")"
for _ in $(seq 1 50); do
  "$TH" exec fbf 3 bash -c 'exec 3<>/dev/tcp/fbf3/2222' 2>/dev/null || break
  sleep 0.1
done
ends "bare metal: sshd down on fbf3" 6 12 \
  '^baremetal: ssh from fbf1 to fbf3 failed for 4s \(.*Connection refused.*\): check sshd on fbf3' \
  "${bm[@]}" --hosts fbf1,fbf2,fbf3 "${key[@]}" --ssh-wait 4 all_reduce
FBL_SCENARIO=probe ends "kubectl: worker pod fabric-bench-2 never Ready" 8 15 \
  '^kubectl.sh: pod fabric-bench-2 not Ready after 4s \(1/2 containers ready: fabric-bench not ready\): its sshd does not accept connections on port 2222' \
  "${kc[@]}" --wait 4 -- "${sweep[@]}"
