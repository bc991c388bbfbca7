#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Install the Debian 12 packages dprpc needs to build, test and run its
# demo, if any is missing.  Safe to run again: it does nothing when all
# are there.
set -euo pipefail

pkgs=(
	gcc g++ pkg-config meson ninja-build python3 binutils
	libdpdk-dev          # DPDK 22.11: EAL, ethdev, rings, mempools, PMD plugins
	liburcu-dev          # RCU (QSBR flavour) and lock-free hash tables
	libcriterion-dev     # the test framework
	libbsd-dev libnuma-dev libpcap-dev libelf-dev   # for libdpdk.pc's private deps
	iproute2             # network namespaces and veth pairs in tests
	iputils-ping         # the netns test pings an agent (ARP and ICMP echo)
	clang                # builds tests/netns/xdp_drop.c (clang -target bpf) and the fuzzer
	libclang-rt-dev      # libFuzzer and the sanitizer runtimes for clang
	libbpf-dev           # bpf/bpf_helpers.h for the XDP program
	linux-libc-dev       # linux/bpf.h, asm/types.h (-I/usr/include/<multiarch>) for it
	ethtool              # the veth's XDP verdict counters in the netns test
	libsodium-dev        # the frames' tags (SipHash-2-4, BLAKE2b); perf/mac_bench.c
	nettle-dev           # a payload's tag (UMAC-64); perf/mac_bench.c
	libssl-dev           # perf/mac_bench.c: OpenSSL's EVP_MAC SIPHASH and GMAC, AES-GCM
	libopenblas-dev      # examples/model: the batched forward pass (cblas_sgemm)
	python3-sklearn      # examples/model: the digits data set and the MLP's training
	gnuplot-nox          # perf/sweep.sh's latency-vs-load figure
	python3-dev          # the Python package's extension (python/)
	python3-pytest       # the Python suite
	python3-numpy        # the Python suite: arrays out of band
	python3-torch        # the Python suite and bench: the same script under torch.distributed.rpc
)

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "setup-deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
	sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
