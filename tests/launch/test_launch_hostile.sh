#!/usr/bin/env bash
# The launchers against hostile or odd input: work directories someone else
# made first, values that would run commands in a pod or start a new line
# in a generated script, cluster labels that leave results/, pod lists with
# empty fields, and option values that are no value at all. Each refusal is
# one line naming the option, with a documented exit code; each accepted
# value arrives as it was given. Then the same on namespace hosts through
# the kubectl stand-in, where the pod's shell is real.
# shellcheck disable=SC2016 # payloads and patterns hold a literal $
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/launch/common.sh
. "$(dirname "$0")/common.sh"

BM=$FB_ROOT/launch/baremetal.sh
KC=$FB_ROOT/launch/kubectl.sh
SL=$FB_ROOT/launch/slurm.sh
STANDIN=$FB_ROOT/tests/launch/kubectl-standin.sh
RES=$T_DIR/results
export FBL_STATE=$T_DIR/state
mkdir -p "$FBL_STATE"
unset FABRIC_CLUSTER FABRIC_NAME

# refused NAME CODE PATTERN PROG CMD...: one line "PROG: ..." matching
# PATTERN, exit CODE, nothing on stdout, nothing written under $RES.
refused() {
  expect_error "$@"
  if [ -e "$RES" ]; then not_ok "$1: writes nothing" "$(find "$RES" | head -n 3 | tr '\n' ' ')"; rm -rf "$RES"; fi
}
kc=("$KC" --kubectl "$STANDIN")

# ---- control characters: never a new line in a generated script ---------------------
refused "slurm -A with a newline" 2 '^slurm: -A has a control character .* in .acct?touch x.' slurm \
  "$SL" --print-sbatch -N 2 -A $'acct\ntouch x' --results "$RES" all_reduce
refused "slurm --account= with a carriage return" 2 '^slurm: --account has a control character' slurm \
  "$SL" --dry-run --sbatch --account=$'acct\r' all_reduce
refused "slurm -p with a space (a second #SBATCH option)" 2 '^slurm: --partition wants a Slurm name' slurm \
  "$SL" --print-sbatch -p 'gpu --output=/etc/motd' all_reduce
refused "slurm --srun-arg with a newline" 2 '^slurm: --srun-arg has a control character' slurm \
  "$SL" --dry-run --srun-arg=$'--reservation=a\nrm -rf /' all_reduce
refused "slurm --env with an escape character" 2 '^slurm: --env has a control character' slurm \
  "$SL" --dry-run --env $'NCCL_X=\e[2J' all_reduce
refused "kubectl --workdir with a newline" 2 '^kubectl.sh: --workdir has a control character' kubectl.sh \
  "${kc[@]}" --dry-run --workdir $'/tmp/a\nb' all_reduce
refused "kubectl --pod-root with a tab" 2 '^kubectl.sh: --pod-root has a control character' kubectl.sh \
  "${kc[@]}" --dry-run --pod-root $'/opt/a\tb' all_reduce
refused "kubectl --workdir relative" 2 '^kubectl.sh: --workdir wants an absolute path inside the pod' kubectl.sh \
  "${kc[@]}" --dry-run --workdir 'tmp' all_reduce
refused "baremetal --hosts with a newline (a line of the hostfile)" 2 '^baremetal: --hosts has a control character' baremetal \
  "$BM" --dry-run --hosts $'n1\nHOSTS\ntouch x' all_reduce
refused "baremetal --mpirun-arg with DEL" 2 '^baremetal: --mpirun-arg has a control character' baremetal \
  "$BM" --dry-run --hosts n1 --mpirun-arg=$'-v\x7f' all_reduce
refused "baremetal: a collective argument with a newline" 2 "^baremetal: the collective's argument has a control character" baremetal \
  "$BM" --dry-run --hosts n1 all_reduce -b $'1K\n-e'
refused "baremetal --ssh-key with a space (mpirun splits plm_rsh_args)" 2 '^baremetal: --ssh-key has white space' baremetal \
  "$BM" --dry-run --hosts n1 --ssh-key '/k/id -oProxyCommand=x' all_reduce
printf 'n1 slots=1\n%s\n' $'n2\e]0;x\a' >"$T_DIR/hostfile.ctl"
refused "baremetal: a hostfile host name with control characters" 10 "^baremetal: hostfile '.*hostfile.ctl' has a bad host name 'n2?]0;x?'" baremetal \
  "$BM" --dry-run --hostfile "$T_DIR/hostfile.ctl" all_reduce
printf 'n1\n-oProxyCommand=touch%s\n' "$T_DIR/pwned" >"$T_DIR/hostfile.opt"
refused "baremetal: a hostfile host name that is an ssh option" 10 "^baremetal: hostfile .* has a bad host name '-oProxyCommand=" baremetal \
  "$BM" --dry-run --hostfile "$T_DIR/hostfile.opt" all_reduce
printf 'FABRIC_NAME=crlf\r\n' >"$T_DIR/crlf.env"
mkdir -p "$T_DIR/root/manifests/components/crlf" "$T_DIR/root/launch"
cp "$T_DIR/crlf.env" "$T_DIR/root/manifests/components/crlf/fabric.env"
cp "$FB_ROOT"/launch/*.sh "$T_DIR/root/launch/"
refused "a fabric.env with CRLF lines" 10 '^baremetal: .*crlf/fabric.env line 1 has a control character (a carriage return?)' baremetal \
  "$T_DIR/root/launch/baremetal.sh" --dry-run --hosts n1 --fabric crlf all_reduce
mkdir -p "$T_DIR/evil"
echo NCCL_EVIL=1 >"$T_DIR/evil/fabric.env"
rel=$(realpath -m --relative-to="$FB_ROOT/manifests/components" "$T_DIR/evil")
refused "--fabric as a path to another fabric.env" 2 "^baremetal: unknown fabric '$rel': use one of" baremetal \
  "$BM" --dry-run --hosts n1 --fabric "$rel" all_reduce
# Accepted values reach the script as they were, quoted.
run "$SL" --dry-run --print-sbatch -N 2 -p gpu -A proj.x_1 --results "$RES" all_reduce
if [ "$T_RC" -eq 0 ] && [ "$(grep -c '^#SBATCH ' "$T_OUT")" -eq 7 ] && grep -qx '#SBATCH --account=proj.x_1' "$T_OUT"; then
  ok "a clean account: one #SBATCH line each, as given"
else
  not_ok "a clean account: one #SBATCH line each, as given" "exit $T_RC: $(grep '^#SBATCH' "$T_OUT" | tr '\n' '|')"
fi

# ---- cluster labels: a directory under results/, never outside it ------------------------
launchers=("baremetal|$BM --hosts n1" "kubectl.sh|${kc[*]}" "slurm|$SL")
for entry in "${launchers[@]}"; do
  prog=${entry%%|*}
  read -r -a cmd <<<"${entry#*|}"
  for bad in .. . '' a/b 'a b' ../x $'a\nb' 'a*'; do
    refused "$prog --cluster $(printf %q "$bad")" 2 "^$prog: --cluster " "$prog" \
      "${cmd[@]}" --dry-run --results "$RES" --cluster "$bad" all_reduce
  done
  refused "$prog FABRIC_CLUSTER=.." 2 "^$prog: FABRIC_CLUSTER wants a label of letters, digits, '.', '_' and '-' (not empty, '.' or '..'), got '..'" "$prog" \
    env FABRIC_CLUSTER=.. "${cmd[@]}" --dry-run --results "$RES" all_reduce
  refused "$prog FABRIC_CLUSTER=a/b" 2 "^$prog: FABRIC_CLUSTER wants a label" "$prog" \
    env FABRIC_CLUSTER=a/b "${cmd[@]}" --dry-run --results "$RES" all_reduce
  run "${cmd[@]}" --dry-run --results "$RES" --cluster a.b_C-1 all_reduce
  if [ "$T_RC" -eq 0 ] && grep -q "$RES/a.b_C-1/[0-9TZ]*-all_reduce.json" "$T_OUT"; then
    ok "$prog: a label of every allowed character is kept as it is"
  else
    not_ok "$prog: a label of every allowed character is kept as it is" "exit $T_RC: $(head -c 300 "$T_ERR")"
  fi
  # --cluster wins over FABRIC_CLUSTER, which is checked only when it is used.
  run env FABRIC_CLUSTER=ok-env "${cmd[@]}" --dry-run --results "$RES" all_reduce
  if [ "$T_RC" -eq 0 ] && grep -q "$RES/ok-env/" "$T_OUT"; then ok "$prog: FABRIC_CLUSTER as the label"
  else not_ok "$prog: FABRIC_CLUSTER as the label" "exit $T_RC: $(head -c 300 "$T_ERR")"; fi
done

# The kubectl context as the default label: mapped, never '.', '..' or empty.
context_label() { # context_label CONTEXT LABEL
  FBL_CONTEXT=$1 run "${kc[@]}" --dry-run --results "$RES" all_reduce
  if [ "$T_RC" -eq 0 ] && grep -q "cp -c fabric-bench .* $RES/$2/[0-9TZ]*-all_reduce.json" "$T_OUT"; then
    ok "kubectl context $(printf %q "$1") is label $2"
  else
    not_ok "kubectl context $(printf %q "$1") is label $2" "exit $T_RC: $(grep ' cp ' "$T_OUT" | head -c 300) $(head -c 300 "$T_ERR")"
  fi
}
context_label .. '_\.\.'
context_label . '_\.'
context_label '' kubernetes
context_label 'arn:aws:eks:us-east-1:1:cluster/a b' 'arn_aws_eks_us-east-1_1_cluster_a_b'
context_label gke_proj_zone_name gke_proj_zone_name
# The mapping itself (docs/clusters.md), as fb_label_from gives it.
# shellcheck source=launch/lib.sh
mapping=$(. "$FB_ROOT/launch/lib.sh"; for n in . .. '' ... a/b $'x\ny' 'é' '-x' 'a.b'; do
  printf '%s ' "$(fb_label_from "$n" FALLBACK)"; done)
if [ "$mapping" = "_. _.. FALLBACK ... a_b x_y __ -x a.b " ]; then ok "fb_label_from: the documented mapping"
else not_ok "fb_label_from: the documented mapping" "got '$mapping'"; fi

# ---- option values that are no value ----------------------------------------------------
mkdir -p "$T_DIR/hostdir"
refused "--hostfile DIR" 2 "^baremetal: --hostfile '.*/hostdir' is a directory: give a file" baremetal \
  "$BM" --dry-run --hostfile "$T_DIR/hostdir" all_reduce
for hosts in ',' 'a,,b' 'a,' ',a'; do
  refused "--hosts $hosts" 2 "^baremetal: --hosts '$hosts' has an empty host name" baremetal \
    "$BM" --dry-run --hosts "$hosts" all_reduce
done
refused "--hosts with an ssh option" 2 "^baremetal: --hosts 'a,-oProxyCommand=x' has a bad host name '-oProxyCommand=x'" baremetal \
  "$BM" --dry-run --hosts a,-oProxyCommand=x all_reduce
for port in 99999 0 65536 22x 99999999999999999999; do
  refused "baremetal --ssh-port $port" 2 "^baremetal: --ssh-port wants a TCP port from 1 to 65535, got '$port'" baremetal \
    "$BM" --dry-run --hosts a --ssh-port "$port" all_reduce
  refused "kubectl --ssh-port $port" 2 "^kubectl.sh: --ssh-port wants a TCP port from 1 to 65535, got '$port'" kubectl.sh \
    "${kc[@]}" --dry-run --ssh-port "$port" all_reduce
done
refused "a count too large for the shell" 2 "^slurm: --nodes wants a positive integer (at most 999999999), got '99999999999999999999'" slurm \
  "$SL" --dry-run -N 99999999999999999999 all_reduce
refused "a wait too large for the shell" 2 "^kubectl.sh: --wait wants a positive integer" kubectl.sh \
  "${kc[@]}" --dry-run --wait 99999999999999999999 all_reduce
expect_stderr_line "pod-sshd.sh: FB_SSH_PORT out of range" 10 "^pod-sshd: FB_SSH_PORT wants a TCP port from 1 to 65535, got '99999'" \
  env FB_SSH_PORT=99999 FB_SSH_SECRET_DIR="$T_DIR/none" "$FB_ROOT/launch/pod-sshd.sh"

# An artifact is one object (the API server keeps none over 1.5 MiB): a
# larger file is refused by its size, before kubectl or jq reads it. Sparse
# files: no disk, no time.
truncate -s 8M "$T_DIR/huge.yaml"
rm -f "$FBL_STATE"/*
refused "--from-file over 4 MiB" 10 "^kubectl.sh: --from-file '.*/huge.yaml' is 8388608 bytes, over the 4 MiB an artifact may be" kubectl.sh \
  "${kc[@]}" derive --from-file "$T_DIR/huge.yaml"
refused "--gpu-nics over 4 MiB" 10 "^kubectl.sh: --gpu-nics '.*/huge.yaml' is 8388608 bytes, over the 4 MiB" kubectl.sh \
  "${kc[@]}" derive --from-file "$FB_ROOT/tests/fixtures/launch/from/clustertrainingruntime-tcpxo.yaml" --gpu-nics "$T_DIR/huge.yaml"
if grep -q "patch --local -f $T_DIR/huge.yaml" "$FBL_STATE/calls" 2>/dev/null; then
  not_ok "an artifact over 4 MiB is never read" "$(grep huge "$FBL_STATE/calls" | head -n 2 | tr '\n' '|')"
else
  ok "an artifact over 4 MiB is never read"
fi

# ---- pod lists: empty fields stay fields, names stay names ---------------------------------
# No host set "fbx" exists: the launcher gets as far as its first exec.
for scenario in noannot empty; do
  rm -f "$FBL_STATE"/*
  what="pods with the fabric annotation missing"
  if [ "$scenario" = empty ]; then
    what="pods with the fabric annotation empty"
    FBL_SET=fbx FBL_FABRIC="" run "${kc[@]}" --wait 5 --cluster x --results "$RES" all_reduce
  else
    FBL_SET=fbx FBL_SCENARIO=noannot run "${kc[@]}" --wait 5 --cluster x --results "$RES" all_reduce
  fi
  if grep -q '2 pods ready (fabric-bench-0 fabric-bench-1), 1 ranks each, fabric none;' "$T_OUT" &&
    ! grep -q 'unknown fabric' "$T_ERR"; then
    ok "$what: fabric none, the fields after it in place"
  else
    not_ok "$what: fabric none, the fields after it in place" "exit $T_RC: $(head -c 300 "$T_OUT") $(head -c 300 "$T_ERR")"
  fi
done
rm -f "$FBL_STATE"/*
FBL_SET=fbx FBL_SCENARIO=badhost run "${kc[@]}" --wait 5 --cluster x all_reduce
if [ "$T_RC" -eq 10 ] && grep -q "^kubectl.sh: pod fabric-bench-1 (spec.hostname and spec.subdomain) has a bad host name '-oProxyCommand=touchfbx'" "$T_ERR" &&
  ! grep -q ' exec ' "$FBL_STATE/calls"; then
  ok "a pod host name that is an ssh option: exit 10 before anything runs in a pod"
else
  not_ok "a pod host name that is an ssh option: exit 10 before anything runs in a pod" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
expect_one_line "a pod host name that is an ssh option: one line" "$T_ERR"

# ---- every exit code a launcher can return is in its --help ---------------------------------
# The codes: the verdicts, and every FB_EXIT_* the launcher and lib.sh use
# (lib.sh's definitions are not uses: a code only kubectl.sh returns is
# defined there for it).
lib_code() { sed -n "s/^$1=\([0-9]*\)$/\1/p" "$FB_ROOT/launch/lib.sh"; }
for l in "$BM" "$KC" "$SL"; do
  name=$(basename "$l")
  exits=$("$l" --help | sed -n '/^Exit:/,$p' | tr '\n' ' ')
  missing=""
  for code in 0 20 21 22 23 $({ cat "$l"; grep -v '^FB_EXIT_[A-Z]*=' "$FB_ROOT/launch/lib.sh"; } | grep -o 'FB_EXIT_[A-Z]*' | sort -u | while read -r c; do lib_code "$c"; done); do
    [[ " $exits " =~ [^0-9]${code}[^0-9] ]] || missing+="$code "
  done
  if [ -n "$exits" ] && [ -z "$missing" ]; then ok "$name --help lists every exit code it returns"
  else not_ok "$name --help lists every exit code it returns" "missing: ${missing:-the Exit: paragraph}"; fi
done

# ---- work directories: never a name someone made first -------------------------------------
# The old names were ${TMPDIR:-/tmp}/fabric-bench-STAMP-PID: plant them as
# links to a directory of "someone else's" for the launcher's own pid (exec
# keeps it) and the next seconds' stamps. The launcher must not write there.
if [ ! -x "$FB_BIN/fabric-coll" ]; then
  skip "work directories someone made first" "no $FB_BIN/fabric-coll: build it (make)"
  exit 0
fi
shim=$T_DIR/shim tmp=$T_DIR/tmp target=$T_DIR/someone-elses
mkdir -p "$shim" "$tmp" "$target"
# mpirun, srun and an ssh that run here. The first two log their
# arguments and the script that called them (run.sh), and write no result.
for tool in mpirun srun; do
  printf '#!/bin/sh\ntr "\\000" " " </proc/$PPID/cmdline >>"%s/%s.args"\nprintf "\\n%%s\\n" "$@" >>"%s/%s.args"\nexit 3\n' \
    "$T_DIR" "$tool" "$T_DIR" "$tool" >"$shim/$tool"
done
printf '#!/bin/sh\necho "fbtest*|up|0/1/0/1|(null)"\n' >"$shim/sinfo"
for tool in sbatch scontrol scancel; do printf '#!/bin/sh\nexit 1\n' >"$shim/$tool"; done
# ssh hands its words, joined, to the remote shell: so does this one.
printf '#!/bin/sh\nshift\nexec sh -c "$*"\n' >"$shim/rsh"
chmod +x "$shim"/*
plant_and_run() { # plant_and_run CMD...: CMD under the planted links
  run env TMPDIR="$tmp" PATH="$shim:$PATH" bash -c '
    for s in 0 1 2 3 4 5 6 7 8 9; do
      ln -s "$1" "$TMPDIR/fabric-bench-$(date -u -d "+$s sec" +%Y%m%dT%H%M%SZ)-$$"
    done
    shift
    exec "$@"' sh "$target" "$@"
}
in_target() { find "$target" -mindepth 1 | head -n 3 | tr '\n' ' '; }
planted_untouched() { # planted_untouched NAME TOOL: nothing in the target, only the links left
  local name=$1 left
  left=$(find "$tmp" -mindepth 1 ! -type l | head -n 3)
  if [ -n "$(in_target)" ]; then
    not_ok "$name: a planted work directory is not used" "it wrote $(in_target)"
  elif ! grep -q "^bash $tmp/fabric-bench-[0-9TZ]*\.[A-Za-z0-9]\{6\}/run\.sh" "$T_DIR/$2.args" 2>/dev/null; then
    not_ok "$name: a planted work directory is not used" "$2 did not run from a mktemp directory: $(head -c 300 "$T_ERR")"
  elif [ -n "$left" ]; then
    not_ok "$name: a planted work directory is not used" "left behind: $left"
  else
    ok "$name: a planted work directory is not used; its own is made and removed"
  fi
  rm -f "$tmp"/* "$T_DIR"/*.args
}
# Bare metal, with --results holding a quote and a command substitution: the
# result fetch over "ssh" must pass it as one word.
weird=$T_DIR/res\'\$\(touch\ $T_DIR/pwned-fetch\)\'
plant_and_run "$BM" --hosts localhost --rsh "$shim/rsh" --ranks-per-node 1 --cluster plant \
  --results "$weird" all_reduce -b 1K -e 1K
if [ "$T_RC" -eq 3 ] && grep -q '^baremetal: the run wrote no result (mpirun exit 3)' "$T_ERR"; then
  ok "bare metal under planted links: the run starts and ends with mpirun's exit code"
else
  not_ok "bare metal under planted links: the run starts and ends with mpirun's exit code" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
planted_untouched "bare metal" mpirun
if [ -e "$T_DIR/pwned-fetch" ]; then not_ok "the result fetch over ssh quotes the path" "the command substitution ran"
elif [ -d "$weird/plant" ]; then ok "the result fetch over ssh quotes the path; the results directory is as given"
else not_ok "the result fetch over ssh quotes the path; the results directory is as given" "no $weird/plant"; fi
# Slurm's srun path, inside an allocation (no --test-only to answer).
plant_and_run env SLURM_JOB_ID=42 "$SL" -N 1 --ranks-per-node 1 --cluster plant --results "$RES" all_reduce -b 1K -e 1K
if [ "$T_RC" -eq 3 ] && grep -q '^slurm: the run wrote no result (srun exit 3' "$T_ERR"; then
  ok "srun under planted links: the run starts and ends with srun's exit code"
else
  not_ok "srun under planted links: the run starts and ends with srun's exit code" "exit $T_RC: $(head -c 300 "$T_ERR")"
fi
planted_untouched "srun" srun

# ---- in a pod's real shell (namespace hosts) -------------------------------------------------
hosts_up fbl 2 "hostile values in a pod's shell"
export FBL_COUNT=2
host_profile fbl-host
common=(--kubectl "$STANDIN" --pod-root "$FB_ROOT" --pod-bin "$FB_BIN" --ssh-port 2222
  --ssh-key "$dir/id_ed25519" --bind none --results "$RES" --mpirun-arg=--mca --mpirun-arg=op --mpirun-arg=^avx
  "${profile_args[@]+"${profile_args[@]}"}")
sweep=(all_reduce --backend mpi -b 1K -e 4K -f 2 -n 2 -w 0)

# --workdir with a quote and a command substitution: the pod's shell gets it
# as an argument; it runs nothing and the directory has that very name.
wd=$T_DIR/w\'\$\(touch\ $T_DIR/pwned-pod\)\'\"\`touch\ $T_DIR/pwned-pod2\`\"
rm -f "$FBL_STATE"/*
run timeout 300 "$KC" "${common[@]}" --workdir "$wd" --cluster hostile --wait 20 -- "${sweep[@]}"
if [ -e "$T_DIR/pwned-pod" ] || [ -e "$T_DIR/pwned-pod2" ]; then
  not_ok "--workdir with shell syntax runs nothing in the pod" "the command substitution or backquotes ran"
else
  ok "--workdir with shell syntax runs nothing in the pod"
fi
case $T_RC in
  0 | 2[0-3]) ok "--workdir with shell syntax: the run ends with a verdict ($T_RC)" ;;
  *) not_ok "--workdir with shell syntax: the run ends with a verdict" "exit $T_RC: $(head -c 400 "$T_ERR")" ;;
esac
if [ -d "$wd" ] && [ -z "$(ls -A "$wd")" ] && [ -s "$(find "$RES/hostile" -name '*-all_reduce.json' | head -n 1)" ]; then
  ok "--workdir arrives intact: the job's directory was made in it, the result copied back, the directory removed"
else
  not_ok "--workdir arrives intact" "$(find "$T_DIR" -path "$T_DIR/w*" | head -n 5 | tr '\n' ' ')"
fi

# Default work directory, with the old one (/tmp/fabric-bench) planted as a
# link; pods without the fabric annotation; a context named '..'.
if [ -e /tmp/fabric-bench ] || [ -L /tmp/fabric-bench ]; then
  skip "the pod's old work directory planted" "/tmp/fabric-bench exists on this machine"
  exit 0
fi
ln -s "$target" /tmp/fabric-bench
on_exit "[ -L /tmp/fabric-bench ] && rm -f /tmp/fabric-bench"
rm -f "$FBL_STATE"/*
FBL_SCENARIO=noannot FBL_CONTEXT=.. run timeout 300 "$KC" "${common[@]}" --wait 20 -- "${sweep[@]}"
rm -f /tmp/fabric-bench
result=$(find "$RES/_.." -name '*-all_reduce.json' 2>/dev/null | head -n 1)
case $T_RC in
  0 | 2[0-3]) ok "pods without the annotation, context '..': the run ends with a verdict ($T_RC)" ;;
  *) not_ok "pods without the annotation, context '..': the run ends with a verdict" "exit $T_RC: $(head -c 400 "$T_ERR")" ;;
esac
if [ -n "$result" ] && jq -e '.cluster == "_.."' "$result" >/dev/null; then
  ok "context '..': results/_../, recorded as cluster '_..'"
else
  not_ok "context '..': results/_../, recorded as cluster '_..'" "$(find "$T_DIR" -name '*-all_reduce.json' | head -n 3 | tr '\n' ' ')"
fi
if [ -z "$(in_target)" ]; then ok "the pod's old work directory, planted as a link, is not used"
else not_ok "the pod's old work directory, planted as a link, is not used" "it wrote $(in_target)"; fi
job=$(sed -n 's/^kubectl .* exec fabric-bench-0 -c fabric-bench -- bash \(.*\)\/run\.sh$/\1/p' "$FBL_STATE/calls")
if [[ $job == "${TMPDIR:-/tmp}"/fabric-bench-[0-9]*-all_reduce.?????? ]] && [ ! -e "$job" ]; then
  ok "the pod's work directory came from mktemp -d and is removed after the copy ($job)"
else
  not_ok "the pod's work directory came from mktemp -d and is removed after the copy" "'$job'"
fi
