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
  check_layers.py upward   SRC BUILD   tests/layers/upward.c, a file of the
                                       base layer that includes dp_rpc.h,
                                       fails to compile with the base
                                       layer's flags (those of base/stage.c,
                                       which compiles): dp_rpc.h not found

Each prints what it found and exits 1 on a finding not in its allowlist
below, or on an allowlisted one that is gone (the lists only shrink).
"""
import json
import os
import re
import shlex
import subprocess
import sys

LAYERS = ['wire', 'port', 'base', 'rpc', 'world', 'agent']
MAX_LINES = 700

# dataplane/ext/: the extension interface, below every layer.
EXT = 'ext'

# Every file of the dataplane is in the folder of its layer (a layer's
# memif2211/ folder is that layer's); none directly in dataplane/.
FLAT = {}

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


def check_upward(src, build):
	with open(os.path.join(build, 'compile_commands.json')) as fh:
		cmds = json.load(fh)
	base = [c for c in cmds if c['file'].endswith('dataplane/base/stage.c')
		and 'libdprpc_dp_base' in c['output']]
	if len(base) != 1:
		print('no compile command for dataplane/base/stage.c')
		return 1
	c = base[0]
	args = shlex.split(c['command'])
	out, skip = [], False
	for a in args:
		if skip:
			skip = False
			continue
		if a in ('-MD',):
			continue
		if a in ('-MQ', '-MF', '-o', '-c'):
			skip = True
			continue
		out.append(a)
	stage = os.path.join(c['directory'], c['file'])
	bad = [x for x in out if os.path.abspath(os.path.join(c['directory'], x)) == os.path.abspath(stage)]
	out = [x for x in out if x not in bad]
	upward = os.path.join(src, 'tests', 'layers', 'upward.c')
	run = lambda f: subprocess.run(out + ['-fsyntax-only', '-fdiagnostics-color=never', f], cwd=c['directory'],
		capture_output=True, text=True)
	ctl = run(stage)
	if ctl.returncode != 0:
		print('the control, base/stage.c, does not compile:\n' + ctl.stderr)
		return 1
	up = run(upward)
	print(up.stderr.strip())
	if up.returncode == 0:
		print('tests/layers/upward.c compiled: the base layer sees dp_rpc.h')
		return 1
	if not re.search(r"dp_rpc\.h'? file not found|dp_rpc\.h: No such file", up.stderr):
		print('tests/layers/upward.c failed, but not for want of dp_rpc.h')
		return 1
	print('upward: the base layer cannot include dp_rpc.h, as it must not')
	return 0


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
	elif what == 'upward':
		rc = check_upward(src, sys.argv[3])
	else:
		print(__doc__)
		return 2
	if rc == 0:
		print(f'{what}: ok')
	return rc


if __name__ == '__main__':
	sys.exit(main())
