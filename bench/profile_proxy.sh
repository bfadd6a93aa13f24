#!/bin/sh
# A sampling profile of `glider serve` on the request path under load (issue 29): bench_proxy.py's
# setup (fake upstream, bench config, routing and events on), with py-spy (`pip install -e '.[bench]'`)
# recording the server's process while the load generator runs c=32.
#
#   bench/profile_proxy.sh [OUT] [SECONDS]      (default: glider-serve.txt, 20 s)
#
# Keeps the collapsed stacks in OUT (for a flame graph tool) and prints the hottest functions;
# --idle is off so the figures are the CPU the request path spends. py-spy needs ptrace rights over
# its child: it runs the server itself, so no sudo is needed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-glider-serve.txt}
secs=${2:-20}
py=${PYTHON:-python}
exec "$py" "$here/profile_proxy.py" "$out" "$secs"
