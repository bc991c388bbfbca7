#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Build examples/hello_rpc.c the way an application would, with nothing but
# pkg-config's answer: first against the build tree (meson's
# dprpc-uninstalled.pc), then against dprpc installed into a scratch
# DESTDIR.
set -euo pipefail
builddir=$(realpath "$1")
srcdir=$(realpath "$2")
dest=$(mktemp -d /tmp/dprpc-pc-XXXXXX)
trap 'rm -rf "$dest"' EXIT

# The build tree, uninstalled: compiled outside the tree (in $dest), it
# must find <dprpc/dprpc.h> and the generated dprpc_version.h, and link
# and resolve the build tree's libdprpc.
uflags=$(PKG_CONFIG_PATH="$builddir/meson-uninstalled" pkg-config --cflags --libs dprpc)
cd "$dest"
# shellcheck disable=SC2086
cc -std=c11 -D_GNU_SOURCE -Wall -Werror -o "$dest/hello_rpc_uninstalled" \
	"$srcdir/examples/hello_rpc.c" $uflags ||
	{ echo "uninstalled: pkg-config's flags ($uflags) do not build hello_rpc"; exit 1; }
deps=$(LD_LIBRARY_PATH="$builddir" ldd "$dest/hello_rpc_uninstalled")
grep -q "libdprpc.so.0 => $builddir/libdprpc.so.0" <<<"$deps" ||
	{ echo "hello_rpc does not resolve the build tree's libdprpc:"; echo "$deps"; exit 1; }
echo "pkg-config consumer: built and linked against the build tree $builddir"

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
