#!/usr/bin/env bash
# Stands in for gnuplot in tests: starts a child that would outlive it, writes
# the child's pid to $FAKE_GNUPLOT_CHILD, then never finishes, so
# fabric-report's timeout must end both.
sleep 300 &
echo "$!" >"${FAKE_GNUPLOT_CHILD:?}"
sleep 300
