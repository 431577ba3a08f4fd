#!/usr/bin/env bash
# Starts one rank: mpirun runs `rank.sh fabric-coll ...` on every host.
# A fabric whose tuned environment is a script on the node (GKE TCPXO:
# nccl-env-profile.sh, paired with the installed plugin) names it in
# FABRIC_ENV_SCRIPT; it is sourced here, on the rank's own host, because only
# that host has it. The launcher's NCCL_DEBUG settings survive it, so the
# INFO log that tells the transport is always there.
set -u
if [ -n "${FABRIC_ENV_SCRIPT:-}" ]; then
  if [ ! -r "$FABRIC_ENV_SCRIPT" ]; then
    echo "fabric-bench rank on $(hostname): FABRIC_ENV_SCRIPT $FABRIC_ENV_SCRIPT is not readable: is the plugin installer running on this node and its directory mounted?" >&2
    exit 10
  fi
  keep_debug=${NCCL_DEBUG-} keep_subsys=${NCCL_DEBUG_SUBSYS-}
  # shellcheck source=/dev/null
  . "$FABRIC_ENV_SCRIPT"
  [ -n "$keep_debug" ] && export NCCL_DEBUG="$keep_debug"
  [ -n "$keep_subsys" ] && export NCCL_DEBUG_SUBSYS="$keep_subsys"
fi
exec "$@"
