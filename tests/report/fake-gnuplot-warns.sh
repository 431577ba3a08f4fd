#!/usr/bin/env bash
# Stands in for gnuplot in tests: prints a warning the way gnuplot does and
# writes no picture, so fabric-report must refuse the plot.
echo "warning: fake gnuplot complains about $1" >&2
exit 0
