#!/bin/sh
# bootstrap.sh -- the README's first quick-start command: install what is
# missing (Debian 12 packages), build autoshard in this directory, and run
# its main job on a built-in default (no input file needed).
#   ./bootstrap.sh            install + build + run
#   ./bootstrap.sh --deps     only install the packages
set -eu
cd "$(dirname "$0")"
PKGS="build-essential autoconf automake pkg-config libglpk-dev glpk-utils libigraph-dev \
libpcre2-dev libjansson-dev coinor-libcbc-dev coinor-cbc libprotobuf-c-dev protobuf-c-compiler libonnx-dev"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    echo "bootstrap: installing:$missing" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi
[ "${1:-}" = "--deps" ] && exit 0
[ -x configure ] || autoreconf -fi
[ -f Makefile ] || ./configure
make -j"$(nproc 2>/dev/null || echo 2)"
echo "bootstrap: built ./autoshard; running the main job:" >&2
./autoshard solve
