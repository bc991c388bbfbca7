#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install dprpc into a scratch DESTDIR and build examples/hello_rpc.c the
# way an application would: with nothing but pkg-config's answer.
set -euo pipefail
builddir=$1
srcdir=$2
dest=$(mktemp -d /tmp/dprpc-pc-XXXXXX)
trap 'rm -rf "$dest"' EXIT

DESTDIR="$dest" meson install -C "$builddir" --no-rebuild --quiet >/dev/null
pc=$(find "$dest" -name dprpc.pc | head -n1)
[ -n "$pc" ] || { echo "no dprpc.pc installed"; exit 1; }
# The installed .pc names the configured prefix; point it at DESTDIR (only
# dprpc's: libdpdk's must stay where Debian put it).
prefix=$(sed -n 's/^prefix=//p' "$pc")
mkdir -p "$dest/pc"
sed "s|^prefix=.*|prefix=$dest$prefix|" "$pc" >"$dest/pc/dprpc.pc"
export PKG_CONFIG_PATH="$dest/pc"
flags=$(pkg-config --cflags --libs dprpc)
# shellcheck disable=SC2086
# DPDK headers want POSIX/GNU extensions, as in any DPDK application.
cc -std=c11 -D_GNU_SOURCE -Wall -Werror -o "$dest/hello_rpc" "$srcdir/examples/hello_rpc.c" $flags
libdir=$(pkg-config --variable=libdir dprpc)
# ldd's whole output first: with pipefail, grep -q quitting at its match
# could kill ldd with SIGPIPE while it still wrote, and fail the pipeline
# (it did once, in CI).
deps=$(LD_LIBRARY_PATH="$libdir" ldd "$dest/hello_rpc")
grep -q "libdprpc.so.0 => $libdir" <<<"$deps" ||
	{ echo "hello_rpc does not resolve the installed libdprpc:"; echo "$deps"; exit 1; }
# Only dprpc_* symbols are exported.
bad=$(nm -D --defined-only "$libdir/libdprpc.so.0" | awk '$2 ~ /[TDB]/ {print $3}' | grep -v '^dprpc_' || true)
[ -z "$bad" ] || { echo "exported non-dprpc symbols: $bad"; exit 1; }
echo "pkg-config consumer: built and linked against $libdir"
