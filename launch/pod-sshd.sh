#!/usr/bin/env bash
# Entry point of the worker containers: sshd in the foreground on
# $FB_SSH_PORT (222), accepting the per-job key from the Secret mounted at
# $FB_SSH_SECRET_DIR (keys ssh-privatekey and ssh-publickey, as
# `launch/kubectl.sh keygen` and the MPI Operator both write them). The host
# key is made at start: no key of any kind lives in the image.
set -euo pipefail
port=${FB_SSH_PORT:-222}
secret=${FB_SSH_SECRET_DIR:-/etc/fabric-bench/ssh}
run=${FB_SSH_RUN_DIR:-/run/fabric-bench/ssh}

die() { echo "pod-sshd: $*" >&2; exit 10; }
# Both go into sshd_config lines: a port, and a path with no white space or
# control characters (each would end or split its line).
if ! [[ $port =~ ^[0-9]{1,5}$ ]] || [ "$port" -lt 1 ] || [ "$port" -gt 65535 ]; then
  die "FB_SSH_PORT wants a TCP port from 1 to 65535, got '$port': fix the container's environment"
fi
[[ $run =~ ^/[A-Za-z0-9/._-]*$ ]] ||
  die "FB_SSH_RUN_DIR wants an absolute path of letters, digits and / . _ -: fix the container's environment"
if [ ! -r "$secret/ssh-privatekey" ] || [ ! -r "$secret/ssh-publickey" ]; then
  die "no ssh-privatekey/ssh-publickey in $secret: create the Secret (launch/kubectl.sh keygen -n NAMESPACE) and restart the pod"
fi

umask 077
mkdir -p "$run" /run/sshd
# Private copies: Secret files are symlinks with modes ssh refuses.
cp "$secret/ssh-privatekey" "$run/id"
cp "$secret/ssh-publickey" "$run/authorized_keys"
rm -f "$run/host_key" "$run/host_key.pub"
ssh-keygen -q -t ed25519 -N '' -C "fabric-bench host $(hostname)" -f "$run/host_key"
cat >"$run/sshd_config" <<CONF
Port $port
HostKey $run/host_key
AuthorizedKeysFile $run/authorized_keys
PidFile $run/sshd.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
# The key files are root's, in a root-only directory made above.
StrictModes no
PrintMotd no
# mpirun opens one session per host at once; a wide job many at a time.
MaxStartups 200:30:400
MaxSessions 200
CONF
exec /usr/sbin/sshd -D -e -f "$run/sshd_config"
