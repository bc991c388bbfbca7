#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A station outside a dprpc world that sniffs its segment and spoofs it.

The attacker of tests/netns_spoof.sh (issue 30).  It holds no key and is
in no world map; everything it sends is built from docs/wire.md (a 72-byte
big-endian header at offset 42 of an Ethernet/IPv4/UDP frame), with right
IPv4 and UDP checksums, on an AF_PACKET socket of its own interface in
promiscuous mode.  Python standard library only.

  spoof.py sniff  --iface IF --until FILE [--max-seconds S] --save PCAP
  spoof.py attack --iface IF --until FILE [--max-seconds S] [--old PCAP]
                  [--repeat K] [--save PCAP] [--seed N]
  spoof.py revive --iface IF --until FILE [--max-seconds S] --rank R
                  --dead FILE2 [--every P] [--for T] [--again U]
  spoof.py tags   --capture PCAP --key-file KEY

sniff: capture the segment's dprpc frames until FILE exists (or S
seconds), into PCAP (frames of an earlier incarnation, for a later attack).

attack: sniff the same way, learn from the frames every worker's MAC,
IPv4 address, UDP port, rank, incarnation (session), CONTROL sequence
number, the request numbers and slots of each pair, the handler ids
called and the RRefs fetched (their rref and fork ids), then send, to each
worker it saw:
  forged      frames of its world (its world id), as one of its peers,
              with a tag of zeros or random bytes: REQUESTs of the handler
              it saw called most (new slots and request numbers), an RRef
              DELETE (a REQUEST of "dprpc.rref.delete" for an RRef it saw
              fetched), CONTROL PING, PONG, LEAVE, CLOSE and CANCEL (the
              next request numbers), JOINs (to and from DP_RANK_NONE), and
              frames of a new incarnation of the peer (another session);
  other_world the same kinds, but of another world: another key's world
              id and that key's tags (SipHash-2-4 and BLAKE2b as
              docs/security.md says), same names, ranks and addresses;
  replay      frames it sniffed, each sent verbatim REPEAT times: every
              CONTROL frame, and of each kind of the others (REQUEST and
              RESPONSE per handler, ACK) the first 10 and the last 30;
  old         with --old, frames of that capture (an earlier incarnation of
              the same world), sent verbatim once: every CONTROL frame
              and of each other kind the first 10 and the last 30.
It prints what it learned, and how many frames of each kind it sent to
each rank, then one line per rank:
  spoof: to rank R: forged=N other_world=N old=N replay_control=N
         replay_control_distinct=N replay_data=N replay_distinct=N
(what tests/netns_spoof.sh compares with the receivers' counters).

revive: sniff the same way, keep rank R's last 50 frames that are not
CONTROL frames (its responses, say), wait until FILE2 exists (R was
killed), then replay them to their receivers, one every P s (0.1) for T s
(4), and one more U s (0: none) after FILE2 appeared.  Frames of the
incarnation the receivers know, with right tags: the replay window must
refuse them, or they would make a dead worker look alive.

tags: recompute, with the world key, the tag and world id of every dprpc
frame of a capture, and say whether all agree: a check of this file's
SipHash-2-4 and key derivation (what its other_world frames rely on),
never used by the attack.
"""

import argparse
import collections
import ctypes
import ctypes.util
import hashlib
import os
import random
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_OUTGOING = 4

L2L4 = 42  # Ethernet 14, IPv4 20, UDP 8
# magic version type flags src dst slot req_num session dst_session pkt_idx
# pkt_cnt msg_len handler_id status credits budget world_id seq tag
HDR = struct.Struct("!HBBHHHHIQQHHIIIHHIQ8s")
assert HDR.size == 72
MAGIC, VERSION = 0xD9C1, 3
REQUEST, RESPONSE, ACK, CONTROL = 1, 2, 3, 4
TYPES = {1: "REQUEST", 2: "RESPONSE", 3: "ACK", 4: "CONTROL", 5: "CHUNK", 6: "STREAM_ACK"}
PING, PONG, CANCEL, LEAVE, CLOSE, JOIN = 1, 2, 3, 4, 13, 7
OPS = {1: "PING", 2: "PONG", 3: "CANCEL", 4: "LEAVE", 5: "LEAVE_ACK", 6: "CANCEL_ACK",
       7: "JOIN", 8: "JOIN_RELAY", 9: "ANNOUNCE", 10: "ANNOUNCE_ACK", 11: "JOIN_DONE",
       12: "JOIN_ACK", 13: "CLOSE", 14: "CLOSE_ACK", 15: "HELD"}
CANCEL_ACK_WANTED = 1
RANK_NONE = 65535
FORGED_SLOT = 40  # far above the slots a caller one call at a time uses


def say(*a):
    print("spoof:", *a, flush=True)


def fnv1a32(name):
    """dprpc_handler_id(): FNV-1a 32 of the name, 0 made 1."""
    h = 0x811C9DC5
    for b in name.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h or 1


H_RREF = {n: fnv1a32("dprpc.rref." + n)
          for n in ("remote", "fetch", "proxy", "notify", "accept", "delete")}

M64 = (1 << 64) - 1


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M64


def siphash24(key, data):
    """SipHash-2-4, 64 bits, as libsodium's crypto_shorthash_siphash24."""
    k0, k1 = struct.unpack("<QQ", key)
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D,
         k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def rounds(n):
        for _ in range(n):
            v[0] = (v[0] + v[1]) & M64
            v[1] = _rotl(v[1], 13) ^ v[0]
            v[0] = _rotl(v[0], 32)
            v[2] = (v[2] + v[3]) & M64
            v[3] = _rotl(v[3], 16) ^ v[2]
            v[0] = (v[0] + v[3]) & M64
            v[3] = _rotl(v[3], 21) ^ v[0]
            v[2] = (v[2] + v[1]) & M64
            v[1] = _rotl(v[1], 17) ^ v[2]
            v[2] = _rotl(v[2], 32)

    n = len(data) - len(data) % 8
    for i in range(0, n, 8):
        m = struct.unpack_from("<Q", data, i)[0]
        v[3] ^= m
        rounds(2)
        v[0] ^= m
    b = (len(data) & 0xFF) << 56 | int.from_bytes(data[n:], "little")
    v[3] ^= b
    rounds(2)
    v[0] ^= b
    v[2] ^= 0xFF
    rounds(4)
    return struct.pack("<Q", v[0] ^ v[1] ^ v[2] ^ v[3])


# The reference implementation's first test vector (empty message).
assert siphash24(bytes(range(16)), b"") == bytes.fromhex("310e0edd47db6f72")


_nettle = ctypes.CDLL(ctypes.util.find_library("nettle") or "libnettle.so.8")


def umac64(key, nonce, data):
    """UMAC-64 (RFC 4418) through Nettle, as dp_frame_tag() hashes a
    payload.  The context is opaque here: 8 KiB holds Nettle's (about
    2.5 KiB)."""
    ctx = ctypes.create_string_buffer(8192)
    out = ctypes.create_string_buffer(8)
    _nettle.nettle_umac64_set_key(ctx, key)
    _nettle.nettle_umac64_set_nonce(ctx, ctypes.c_size_t(len(nonce)), nonce)
    _nettle.nettle_umac64_update(ctx, ctypes.c_size_t(len(data)), bytes(data))
    _nettle.nettle_umac64_digest(ctx, ctypes.c_size_t(8), out)
    return out.raw


# RFC 4418's first test vector (empty message).
assert umac64(b"abcdefghijklmnop", b"bcdefghi", b"") == bytes.fromhex("6e155fad26900be1")


def derive(key):
    """The keys and world id a world key gives (dp_auth_derive()): BLAKE2b
    keyed by the world key over a context string (its NUL too); the MAC
    key and the payload key go together."""
    mac = hashlib.blake2b(b"dprpc frame mac\0", digest_size=16, key=key).digest()
    pay = hashlib.blake2b(b"dprpc payload\0", digest_size=16, key=key).digest()
    wid = hashlib.blake2b(b"dprpc world id\0", digest_size=16, key=key).digest()
    # memcpy into a uint32_t on a little-endian host, then sent big-endian.
    return (mac, pay), int.from_bytes(wid[:4], "little")


def tag_of(frame, keys):
    """The tag of a frame (DPRPC_AUTH_HEADER): the header up to its tag,
    and for a CONTROL frame with a payload (a join operation's) the UMAC
    of that payload under the payload key, its nonce the header's session
    and seq."""
    mac, pay = keys
    hdr = frame[L2L4:L2L4 + 64]
    udp_len = struct.unpack(">H", frame[38:40])[0]
    payload = frame[L2L4 + 72:34 + udp_len]
    if frame[L2L4 + 3] == CONTROL and payload:
        hdr += umac64(pay, hdr[16:24] + hdr[56:64], payload)
    return siphash24(mac, hdr)


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


class Frame:
    """A dprpc frame as docs/wire.md lays it out."""
    __slots__ = ("raw", "ts", "dmac", "smac", "sip", "dip", "sport", "dport", "type",
                 "flags", "src", "dst", "slot", "req_num", "session", "dst_session",
                 "pkt_idx", "pkt_cnt", "msg_len", "handler_id", "status", "world_id",
                 "seq", "tag", "payload")

    def kind(self):
        if self.type == CONTROL:
            return "CONTROL " + OPS.get(self.handler_id, str(self.handler_id))
        return TYPES.get(self.type, str(self.type))


def parse(raw, ts=0.0):
    if len(raw) < L2L4 + HDR.size or raw[12:14] != b"\x08\x00":
        return None
    if raw[14] != 0x45 or raw[23] != 17:
        return None
    f = HDR.unpack_from(raw, L2L4)
    if f[0] != MAGIC or f[1] != VERSION:
        return None
    fr = Frame()
    fr.raw, fr.ts = raw, ts
    fr.dmac, fr.smac = raw[0:6], raw[6:12]
    fr.sip, fr.dip = raw[26:30], raw[30:34]
    fr.sport, fr.dport, udp_len = struct.unpack_from("!HHH", raw, 34)
    (_, _, fr.type, fr.flags, fr.src, fr.dst, fr.slot, fr.req_num, fr.session,
     fr.dst_session, fr.pkt_idx, fr.pkt_cnt, fr.msg_len, fr.handler_id, fr.status, _, _,
     fr.world_id, fr.seq, fr.tag) = f
    fr.payload = raw[L2L4 + HDR.size:34 + udp_len]
    return fr


def packet_socket(iface, promisc):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((iface, ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    if promisc:
        mreq = struct.pack("iHH8s", socket.if_nametoindex(iface), PACKET_MR_PROMISC, 0, b"")
        s.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
    return s


def sniff(s, until, max_seconds):
    """Every frame received until the file @until exists (or max_seconds)."""
    frames = []
    s.settimeout(0.05)
    end = time.monotonic() + max_seconds
    next_check = 0.0
    while True:
        now = time.monotonic()
        if now >= next_check:
            if os.path.exists(until) or now >= end:
                break
            next_check = now + 0.05
        try:
            raw, addr = s.recvfrom(2048)
        except socket.timeout:
            continue
        if addr[2] != PACKET_OUTGOING:
            frames.append((time.time(), raw))
    return frames


def pcap_write(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for ts, raw in frames:
            f.write(struct.pack("<IIII", int(ts), int(ts % 1 * 1e6), len(raw), len(raw)))
            f.write(raw)


def pcap_read(path):
    frames = []
    with open(path, "rb") as f:
        data = f.read()
    if struct.unpack_from("<I", data)[0] != 0xA1B2C3D4:
        sys.exit("spoof: %s: not a pcap file of this host's byte order" % path)
    off = 24
    while off + 16 <= len(data):
        sec, usec, n, _ = struct.unpack_from("<IIII", data, off)
        frames.append((sec + usec / 1e6, data[off + 16:off + 16 + n]))
        off += 16 + n
    return frames


def dprpc_frames(frames):
    out = []
    for ts, raw in frames:
        fr = parse(raw, ts)
        if fr is not None:
            out.append(fr)
    return out


class World:
    """What the frames tell about the world on the segment."""

    def __init__(self, frames):
        self.addr = {}        # rank -> (mac, ip, port)
        self.session = {}     # rank -> its latest incarnation
        self.seq = collections.Counter()  # rank -> its highest CONTROL seq
        self.req = {}         # (src, dst) -> latest REQUEST req_num
        self.handlers = collections.Counter()  # (src, dst, handler_id) -> REQUESTs
        self.rrefs = {}       # (src, dst) -> (rref_id, fork_id) of a FETCH/REMOTE
        ids = collections.Counter()
        for fr in frames:
            ids[fr.world_id] += 1
            if fr.src == RANK_NONE or fr.dst == RANK_NONE:
                continue
            self.addr[fr.src] = (fr.smac, fr.sip, fr.sport)
            self.session[fr.src] = fr.session
            if fr.type == CONTROL:
                self.seq[fr.src] = max(self.seq[fr.src], fr.seq)
            if fr.type == REQUEST and fr.pkt_idx == 0:
                self.req[(fr.src, fr.dst)] = fr.req_num
                self.handlers[(fr.src, fr.dst, fr.handler_id)] += 1
                if fr.handler_id in (H_RREF["fetch"], H_RREF["remote"]) and \
                        len(fr.payload) >= 16:
                    self.rrefs[(fr.src, fr.dst)] = struct.unpack_from("!QQ", fr.payload)
        self.world_id = ids.most_common(1)[0][0] if ids else 0

    def user_handler(self):
        """The handler called most, not an RRef one."""
        calls = collections.Counter()
        for (_, _, h), n in self.handlers.items():
            if h not in H_RREF.values():
                calls[h] += n
        return calls.most_common(1)[0][0] if calls else None


class Sender:
    """Frames out, counted per kind and per destination rank."""

    def __init__(self, s, world, rng, mac):
        self.s, self.w, self.rng, self.mac = s, world, rng, mac
        self.sent = collections.Counter()   # (kind, rank) -> frames
        self.total = collections.Counter()  # (category, rank) -> frames
        self.n = 0

    def send(self, raw, kind, category, rank, copies=1):
        for _ in range(copies):
            self.s.send(raw)
            self.n += 1
            if self.n % 16 == 0:
                time.sleep(0.002)  # the receivers' rings are not flooded
        self.sent[(kind, rank)] += copies
        self.total[(category, rank)] += copies

    def build(self, src, dst, *, ftype, op=0, flags=0, slot=0, req_num=0, session=None,
              dst_session=None, status=0, seq=0, payload=b"", world_id=None, mac_key=None,
              src_addr=None, src_worker=None, dst_worker=None):
        """A frame from @src to @dst (ranks of the world map), as docs/wire.md says;
        its tag zeros or random, or made with @mac_key."""
        smac, sip, sport = src_addr or self.w.addr[src]
        dmac, dip, dport = self.w.addr[dst]
        hdr = HDR.pack(MAGIC, VERSION, ftype, flags,
                       src if src_worker is None else src_worker,
                       dst if dst_worker is None else dst_worker, slot, req_num,
                       self.w.session[src] if session is None else session,
                       self.w.session[dst] if dst_session is None else dst_session,
                       0, 1, len(payload), op, status, 0, 0,
                       self.w.world_id if world_id is None else world_id, seq, bytes(8))
        udp_len = 8 + len(hdr) + len(payload)
        ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 0, 0x4000, 64, 17,
                                   0, sip, dip))
        struct.pack_into("!H", ip, 10, csum(bytes(ip)))
        udp = bytearray(struct.pack("!HHHH", sport, dport, udp_len, 0))
        frame = bytearray(dmac + smac + b"\x08\x00" + ip + udp + hdr + payload)
        if mac_key is not None:
            tag = tag_of(bytes(frame), mac_key)
        elif self.rng.random() < 0.5:
            tag = bytes(8)
        else:
            tag = self.rng.randbytes(8)
        frame[L2L4 + 64:L2L4 + 72] = tag
        pseudo = sip + dip + struct.pack("!BBH", 0, 17, udp_len)
        c = csum(pseudo + bytes(frame[34:]))
        struct.pack_into("!H", frame, 40, c or 0xFFFF)
        return bytes(frame)


def forge(snd, a, b, category, world_id=None, mac_key=None):
    """Frames "from" @a to @b: forged ones of its world, or another's."""
    w, rng = snd.w, snd.rng
    kw = {"world_id": world_id, "mac_key": mac_key}
    n = 1 if category == "other_world" else 3
    pre = "other_world_" if category == "other_world" else "forged_"
    seq = w.seq[a] + 1000 + rng.randrange(1000)
    req = (w.req.get((a, b), rng.getrandbits(32)) + 1) & 0xFFFFFFFF
    h = w.user_handler()
    if h is not None:
        for i in range(8 if n == 3 else 3):
            x = rng.getrandbits(64)
            snd.send(snd.build(a, b, ftype=REQUEST, op=h, slot=FORGED_SLOT + i,
                               req_num=(req + 100 + i) & 0xFFFFFFFF,
                               payload=struct.pack("<Q", x), **kw),
                     pre + "request", category, b)
    if (a, b) in w.rrefs:
        rref_id, fork_id = w.rrefs[(a, b)]
        msg = struct.pack("!QQQQIHH", rref_id, fork_id, 0, 0, 0, a, 0)
        for i in range(2 if n == 3 else 1):
            snd.send(snd.build(a, b, ftype=REQUEST, op=H_RREF["delete"],
                               slot=FORGED_SLOT + 20 + i, req_num=(req + 200 + i) & 0xFFFFFFFF,
                               payload=msg, **kw),
                     pre + "rref_delete", category, b)
    for op, name in ((PING, "ping"), (PONG, "pong"), (LEAVE, "leave"), (CLOSE, "close")):
        for i in range(n):
            seq += 1
            snd.send(snd.build(a, b, ftype=CONTROL, op=op, seq=seq, **kw),
                     pre + name, category, b)
    for i in range(n):
        # The next calls of a to b (a server keeps a CANCEL that came
        # before its request, docs/serving.md).
        seq += 1
        snd.send(snd.build(a, b, ftype=CONTROL, op=CANCEL, flags=CANCEL_ACK_WANTED,
                           slot=0, req_num=(req + i) & 0xFFFFFFFF, seq=seq, **kw),
                 pre + "cancel", category, b)
    # JOINs from a station not in the world (DP_RANK_NONE both ways): this
    # one, under an address of its own.
    me = (snd.mac, bytes([10, 0, 2, 200]), 7000)
    for i in range(n):
        s = rng.getrandbits(64) | 1
        # struct dp_join_msg: the joiner (name, MAC, IPv4, port: 44
        # bytes), its session, rank, status, via, have, world_n, count.
        entry = b"mallory".ljust(32, b"\0") + me[0] + me[1] + struct.pack("!H", me[2])
        pay = entry + struct.pack("!QHHHHHH", s, 0, 0, 0, 0, 0, 0)
        snd.send(snd.build(a, b, ftype=CONTROL, op=JOIN, session=s, dst_session=0,
                           src_worker=RANK_NONE, dst_worker=RANK_NONE, seq=1, payload=pay,
                           src_addr=me, **kw),
                 pre + "join", category, b)
    # A new incarnation of a: another session, a PING, a PONG, a request.
    new = rng.getrandbits(64) | 1
    for i in range(n):
        snd.send(snd.build(a, b, ftype=CONTROL, op=PING, session=new, seq=1 + i, **kw),
                 pre + "new_incarnation_ping", category, b)
    snd.send(snd.build(a, b, ftype=CONTROL, op=PONG, session=new, seq=10, **kw),
             pre + "new_incarnation_pong", category, b)
    if h is not None:
        snd.send(snd.build(a, b, ftype=REQUEST, op=h, session=new, slot=FORGED_SLOT + 30,
                           req_num=rng.getrandbits(32), payload=struct.pack("<Q", 7), **kw),
                 pre + "new_incarnation_request", category, b)


def sample(frames, first, last):
    """Every CONTROL frame; of each other kind (type, handler, pair) the
    @first first and the @last last."""
    groups = collections.defaultdict(list)
    for fr in frames:
        if fr.src == RANK_NONE or fr.dst == RANK_NONE:
            continue
        key = (fr.type, fr.handler_id if fr.type in (REQUEST, RESPONSE) else 0,
               fr.src, fr.dst)
        groups[key].append(fr)
    out = []
    for key, g in groups.items():
        if key[0] == CONTROL or len(g) <= first + last:
            out += g
        else:
            out += g[:first] + g[-last:]
    out.sort(key=lambda fr: fr.ts)
    return out


def cmd_sniff(args):
    s = packet_socket(args.iface, True)
    say("sniffing %s until %s" % (args.iface, args.until))
    frames = sniff(s, args.until, args.max_seconds)
    pcap_write(args.save, frames)
    ours = dprpc_frames(frames)
    say("captured %d frames, %d of dprpc, into %s" % (len(frames), len(ours), args.save))
    return 0 if ours else 1


def cmd_attack(args):
    rng = random.Random(args.seed)
    s = packet_socket(args.iface, True)
    say("sniffing %s until %s" % (args.iface, args.until))
    frames = sniff(s, args.until, args.max_seconds)
    if args.save:
        pcap_write(args.save, frames)
    ours = dprpc_frames(frames)
    kinds = collections.Counter(fr.kind() for fr in ours)
    say("sniffed %d frames, %d of dprpc: %s" % (len(frames), len(ours), ", ".join(
        "%s %d" % kv for kv in sorted(kinds.items()))))
    w = World(ours)
    ranks = sorted(r for r in w.addr if r in w.session)
    if len(ranks) < 2:
        say("learned fewer than two workers: nothing to spoof")
        return 1
    say("world id 0x%08x" % w.world_id)
    for r in ranks:
        mac, ip, port = w.addr[r]
        say("rank %d: %s %s:%d session 0x%016x control seq %d" % (
            r, mac.hex(":"), socket.inet_ntoa(ip), port, w.session[r], w.seq[r]))
    for (a, b, h), n in sorted(w.handlers.items()):
        name = [k for k, v in H_RREF.items() if v == h]
        say("rank %d -> %d: %d requests of handler 0x%08x%s, last request number %d" % (
            a, b, n, h, " (dprpc.rref.%s)" % name[0] if name else "", w.req[(a, b)]))
    h = w.user_handler()
    say("forged requests call handler %s" % ("0x%08x" % h if h is not None else "none"))
    for (a, b), (rid, fid) in sorted(w.rrefs.items()):
        say("rank %d -> %d: RRef 0x%016x, fork 0x%016x" % (a, b, rid, fid))

    with open("/sys/class/net/%s/address" % args.iface) as f:
        mac = bytes.fromhex(f.read().strip().replace(":", ""))
    snd = Sender(s, w, rng, mac)
    t0 = time.monotonic()
    # Another world: its own key, its world id, its tags.
    other_key = rng.randbytes(32)
    other_mac, other_id = derive(other_key)
    if other_id == w.world_id:
        other_id ^= 1
    for a in ranks:
        for b in ranks:
            if a != b:
                forge(snd, a, b, "forged")
                forge(snd, a, b, "other_world", world_id=other_id, mac_key=other_mac)
    # Replays of this world's frames, each REPEAT times, round robin.
    replay = [fr for fr in sample(ours, 10, 30) if fr.dst in ranks]
    distinct, distinct_all = collections.Counter(), collections.Counter()
    for fr in replay:
        distinct_all[fr.dst] += 1
        if fr.type == CONTROL:
            distinct[fr.dst] += 1
    for _ in range(args.repeat):
        for fr in replay:
            cat = "replay_control" if fr.type == CONTROL else "replay_data"
            snd.send(fr.raw, "replay " + fr.kind(), cat, fr.dst)
    # Frames of an earlier incarnation of the world.
    if args.old:
        old = [fr for fr in sample(dprpc_frames(pcap_read(args.old)), 10, 30)
               if fr.dst in ranks]
        for fr in old:
            snd.send(fr.raw, "old " + fr.kind(), "old", fr.dst)
    say("sent %d frames in %.2f s" % (snd.n, time.monotonic() - t0))
    for (kind, r), n in sorted(snd.sent.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        say("sent %s to rank %d: %d" % (kind, r, n))
    for r in ranks:
        say("to rank %d: forged=%d other_world=%d old=%d replay_control=%d "
            "replay_control_distinct=%d replay_data=%d replay_distinct=%d" % (
                r, snd.total[("forged", r)], snd.total[("other_world", r)],
                snd.total[("old", r)], snd.total[("replay_control", r)], distinct[r],
                snd.total[("replay_data", r)], distinct_all[r]))
    return 0


def cmd_revive(args):
    s = packet_socket(args.iface, True)
    say("sniffing %s until %s" % (args.iface, args.until))
    ours = dprpc_frames(sniff(s, args.until, args.max_seconds))
    frames = [fr for fr in ours if fr.src == args.rank and fr.type != CONTROL and
              fr.dst != RANK_NONE][-50:]
    if not frames:
        say("no frame of rank %d to replay" % args.rank)
        return 1
    say("kept rank %d's last %d frames (%s); waiting for %s" % (
        args.rank, len(frames), ", ".join(sorted({fr.kind() for fr in frames})), args.dead))
    while not os.path.exists(args.dead):
        time.sleep(0.005)
    t0 = time.monotonic()
    n = 0
    while args.every * (n + 1) <= args.for_ + 1e-9:
        time.sleep(max(0.0, t0 + args.every * (n + 1) - time.monotonic()))
        s.send(frames[n % len(frames)].raw)
        n += 1
    say("replayed %d of them from %.1f s to %.1f s after it died" % (
        n, args.every, args.every * n))
    if args.again > 0:
        time.sleep(max(0.0, t0 + args.again - time.monotonic()))
        s.send(frames[-1].raw)
        say("replayed one more %.1f s after it died" % (time.monotonic() - t0))
    return 0


def cmd_tags(args):
    with open(args.key_file, "rb") as f:
        key = f.read()
    mac_key, wid = derive(key)
    ours = dprpc_frames(pcap_read(args.capture))
    agree = sum(1 for fr in ours if fr.world_id == wid and tag_of(fr.raw, mac_key) == fr.tag)
    say("tags: %d dprpc frames of world 0x%08x (the key gives 0x%08x): %d tags and world ids "
        "recomputed agree" % (len(ours), ours[0].world_id if ours else 0, wid, agree))
    return 0 if ours and agree == len(ours) else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("sniff", "attack", "revive"):
        p = sub.add_parser(name)
        p.add_argument("--iface", required=True)
        p.add_argument("--until", required=True, help="sniff until this file exists")
        p.add_argument("--max-seconds", type=float, default=60)
        if name != "revive":
            p.add_argument("--save", required=name == "sniff", help="pcap of what was sniffed")
        if name == "attack":
            p.add_argument("--old", help="pcap of an earlier incarnation of the world")
            p.add_argument("--repeat", type=int, default=3)
            p.add_argument("--seed", type=int, default=None)
        if name == "revive":
            p.add_argument("--rank", type=int, required=True)
            p.add_argument("--dead", required=True, help="replay once this file exists")
            p.add_argument("--every", type=float, default=0.1)
            p.add_argument("--for", dest="for_", type=float, default=4)
            p.add_argument("--again", type=float, default=0)
    p = sub.add_parser("tags")
    p.add_argument("--capture", required=True)
    p.add_argument("--key-file", required=True)
    args = ap.parse_args()
    return {"sniff": cmd_sniff, "attack": cmd_attack, "revive": cmd_revive,
            "tags": cmd_tags}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
