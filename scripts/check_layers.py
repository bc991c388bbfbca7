#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The dataplane's layers (docs/architecture.md, "The dataplane's layers"):
wire <- port <- base <- rpc <- world <- agent, each using only the ones
below it.

  check_layers.py symbols  SRC BUILD   no object calls up: every dp_* and
                                       dprpc_* symbol an object of the
                                       dataplane uses that another one
                                       defines is defined in its own layer or
                                       a lower one (nm over the objects)
  check_layers.py includes SRC         the #include "dp_*.h" graph of
                                       dataplane/ has no cycle, and no file
                                       includes a header of a higher layer
  check_layers.py lines    SRC         no file of dataplane/ over 700 lines
  check_layers.py relative SRC         no quoted #include with a path in it
                                       ("../rpc/dp_rpc.h" would bypass the
                                       include folders)

Each prints what it found and exits 1 on a finding not in its allowlist
below, or on an allowlisted one that is gone (the lists only shrink).
"""
import os
import re
import subprocess
import sys

LAYERS = ['wire', 'port', 'base', 'rpc', 'world', 'agent']
MAX_LINES = 700

# dataplane/ext/: the extension interface, below every layer.
EXT = 'ext'

# Files directly in dataplane/ (until they move into the layers' folders):
# the layer each belongs to.
FLAT = {
	'codec.c': 'wire', 'world.c': 'wire', 'dp_wire.h': 'wire',
	'port_open.c': 'port', 'port_link.c': 'port', 'port_timer.c': 'port',
	'port_close.c': 'port', 'memif_unhook.c': 'port', 'intr.c': 'port',
	'memif_sock.c': 'port', 'eal.c': 'port', 'mbuf_pool.c': 'port',
	'fault.c': 'port', 'dp_port.h': 'port', 'dp_intr.h': 'port',
	'dp_eal.h': 'port', 'dp_fault.h': 'port', 'dp_mbuf_pool.h': 'port',
	'dp_port_int.h': 'port',
	'rcu.c': 'base', 'req_pool.c': 'base', 'ext.c': 'base', 'poll_lock.c': 'base',
	'info.c': 'base',
	'dp_req_pool.h': 'base', 'dp_poll.h': 'base', 'dp_base.h': 'base',
	'submit.c': 'rpc', 'stage.c': 'base', 'rx.c': 'rpc', 'progress.c': 'rpc',
	'call.c': 'rpc', 'client.c': 'rpc', 'server.c': 'rpc',
	'handler.c': 'rpc', 'request.c': 'rpc', 'reply.c': 'rpc',
	'dispatch.c': 'rpc', 'peer.c': 'rpc', 'liveness.c': 'rpc', 'msg_rx.c': 'rpc',
	'msg_tx.c': 'rpc', 'stream_rx.c': 'rpc', 'stream_tx.c': 'rpc',
	'dp_submit.h': 'rpc', 'dp_stage.h': 'base', 'dp_rx.h': 'rpc', 'dp_client.h': 'rpc', 'dp_server.h': 'rpc',
	'dp_msg.h': 'rpc', 'dp_stream.h': 'rpc', 'dp_liveness.h': 'rpc',
	'dp_handler.h': 'rpc', 'dp_rpc.h': 'rpc',
	'rendezvous.c': 'world', 'join.c': 'world', 'join_assign.c': 'world', 'link_close.c': 'world',
	'dp_rendezvous.h': 'world', 'dp_join.h': 'world',
	'dp_link_close.h': 'world', 'dp_membership.h': 'world',
	'create.c': 'agent', 'destroy.c': 'agent', 'registry.c': 'agent',
	'poll.c': 'agent', 'wait.c': 'agent', 'stats.c': 'agent',
	'telemetry.c': 'agent', 'dp_agent.h': 'agent',
}

# Ratchets: today's findings, allowed until they are gone.
ALLOW_SYMBOLS = {}
ALLOW_CYCLES = []
ALLOW_UP_INCLUDES = {}
ALLOW_LONG = set()


def dataplane_files(src):
	"""Every .c and .h under dataplane/, as paths relative to it."""
	top = os.path.join(src, 'dataplane')
	out = []
	for d, _, names in os.walk(top):
		for n in names:
			if n.endswith(('.c', '.h')):
				out.append(os.path.relpath(os.path.join(d, n), top))
	return sorted(out)


def layer_of(rel):
	first = rel.split('/')[0]
	if first == EXT:
		return EXT
	if '/' in rel and first in LAYERS:
		return first
	return FLAT.get(rel)


def rank(layer):
	return -1 if layer == EXT else LAYERS.index(layer)


def ratchet(found, allowed, what):
	"""found, allowed: {key: set(items)}.  Returns the exit status."""
	bad = 0
	for k in sorted(found):
		for item in sorted(found[k] - allowed.get(k, set())):
			print(f'{what}: {k}: {item}')
			bad = 1
	for k in sorted(allowed):
		for item in sorted(allowed[k] - found.get(k, set())):
			print(f'allowlisted but gone (remove it from {sys.argv[0]}): {k}: {item}')
			bad = 1
	return bad


def check_symbols(src, build):
	files = [f for f in dataplane_files(src) if f.endswith('.c')]
	by_obj = {('dataplane/' + f).replace('/', '_') + '.o': f for f in files}
	objs = {}
	for d in os.listdir(build):
		if not (d.startswith('libdprpc_d') and d.endswith('.a.p')):
			continue
		for o in os.listdir(os.path.join(build, d)):
			if o in by_obj:
				objs[by_obj[o]] = os.path.join(build, d, o)
	missing = sorted(set(files) - set(objs))
	if missing:
		print('no object built for: ' + ' '.join(missing))
		return 1
	defs, undefs = {}, {}
	for f, o in objs.items():
		out = subprocess.run(['nm', '-P', o], check=True, capture_output=True,
			text=True).stdout
		undefs[f] = set()
		for line in out.splitlines():
			parts = line.split()
			if len(parts) < 2:
				continue
			sym, t = parts[0], parts[1]
			if not re.match(r'(dp|dprpc)_', sym):
				continue
			if t == 'U':
				undefs[f].add(sym)
			elif t.isupper():
				defs[sym] = f
	found = {}
	for f in files:
		for sym in undefs[f]:
			d = defs.get(sym)
			if d is not None and rank(layer_of(d)) > rank(layer_of(f)):
				found.setdefault(f, set()).add(sym)
	for f in sorted(found):
		print(f'{f} ({layer_of(f)}) uses ' + ', '.join(
			f'{s} ({layer_of(defs[s])})' for s in sorted(found[f])))
	return ratchet(found, ALLOW_SYMBOLS, 'upward call')


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def includes(src):
	"""{file: [quoted includes]}."""
	out = {}
	for f in dataplane_files(src):
		with open(os.path.join(src, 'dataplane', f)) as fh:
			out[f] = INCLUDE.findall(fh.read())
	return out


def sccs(graph):
	"""Tarjan's strongly connected components of @graph {node: [node]}."""
	index, low, stack, on, out = {}, {}, [], set(), []

	def visit(v):
		index[v] = low[v] = len(index)
		stack.append(v)
		on.add(v)
		for w in graph.get(v, []):
			if w not in index:
				visit(w)
				low[v] = min(low[v], low[w])
			elif w in on:
				low[v] = min(low[v], index[w])
		if low[v] == index[v]:
			c = set()
			while True:
				w = stack.pop()
				on.discard(w)
				c.add(w)
				if w == v:
					break
			out.append(c)

	for v in sorted(graph):
		if v not in index:
			visit(v)
	return out


def check_includes(src):
	inc = includes(src)
	by_name = {}
	for f in inc:
		by_name.setdefault(os.path.basename(f), []).append(f)
	bad = 0
	for n, fs in sorted(by_name.items()):
		if n.endswith('.h') and len(fs) > 1:
			print(f'header name not unique under dataplane/: {" ".join(fs)}')
			bad = 1
	graph, up = {}, {}
	for f, names in inc.items():
		for n in names:
			targets = by_name.get(os.path.basename(n), [])
			if len(targets) != 1:
				continue  # not a dataplane header (fut_internal.h, ...)
			t = targets[0]
			if f.endswith('.h'):
				graph.setdefault(os.path.basename(f), []).append(os.path.basename(t))
			if rank(layer_of(t)) > rank(layer_of(f)):
				up.setdefault(os.path.basename(f), set()).add(os.path.basename(t))
	for f in sorted(up):
		print(f'{f} ({layer_of(f) if f in FLAT else "?"}) includes ' + ', '.join(sorted(up[f])))
	cycles = [c for c in sccs(graph) if len(c) > 1]
	for c in cycles:
		print('include cycle: ' + ' '.join(sorted(c)))
	key = lambda c: ' '.join(sorted(c))
	found = {'cycles': {key(c) for c in cycles}}
	allowed = {'cycles': {key(c) for c in ALLOW_CYCLES}} if ALLOW_CYCLES else {}
	bad |= ratchet({k: v for k, v in found.items() if v}, allowed, 'include cycle')
	bad |= ratchet(up, ALLOW_UP_INCLUDES, 'upward include')
	return bad


def check_lines(src):
	found = {}
	for f in dataplane_files(src):
		with open(os.path.join(src, 'dataplane', f)) as fh:
			n = sum(1 for _ in fh)
		if n > MAX_LINES:
			print(f'{f}: {n} lines')
			found.setdefault('files', set()).add(f)
	allowed = {'files': ALLOW_LONG} if ALLOW_LONG else {}
	return ratchet(found, allowed, f'over {MAX_LINES} lines')


def check_relative(src):
	bad = 0
	for f, names in includes(src).items():
		for n in names:
			if '/' in n:
				print(f'{f}: #include "{n}": a path, not a name from the include folders')
				bad = 1
	return bad


def main():
	if len(sys.argv) < 3:
		print(__doc__)
		return 2
	what, src = sys.argv[1], sys.argv[2]
	for f in dataplane_files(src):
		if layer_of(f) is None:
			print(f'dataplane/{f}: in no layer (add it to {sys.argv[0]})')
			return 1
	if what == 'symbols':
		rc = check_symbols(src, sys.argv[3])
	elif what == 'includes':
		rc = check_includes(src)
	elif what == 'lines':
		rc = check_lines(src)
	elif what == 'relative':
		rc = check_relative(src)
	else:
		print(__doc__)
		return 2
	if rc == 0:
		print(f'{what}: ok')
	return rc


if __name__ == '__main__':
	sys.exit(main())
