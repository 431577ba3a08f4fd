#!/usr/bin/env bash
# Runs one rank as if on its own host: `as-host.sh NAME0,NAME1,... CMD...`
# gives rank K (OMPI_COMM_WORLD_RANK) the host name NAMEK in a UTS namespace
# of its own and FABRIC_NODE_NAME=NAMEK, so one machine holds a fleet of
# one-rank nodes for fabric-scan. A name "-" leaves FABRIC_NODE_NAME unset
# (a node outside Kubernetes) and names the host rank-K. Needs root (unshare).
set -u
IFS=, read -r -a names <<<"$1"
shift
r=${OMPI_COMM_WORLD_RANK:?as-host.sh runs under mpirun}
name=${names[$r]:?no host name for rank $r}
host=$name
if [ "$name" = - ]; then host=rank-$r; unset FABRIC_NODE_NAME; else export FABRIC_NODE_NAME=$name; fi
# shellcheck disable=SC2016 # expands in the new namespace's shell
exec unshare --uts bash -c 'hostname "$1" && shift && exec "$@"' as-host "$host" "$@"
