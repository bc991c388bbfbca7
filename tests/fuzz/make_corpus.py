#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write fuzz_frame's seed frames (tests/fuzz/corpus/) in the current wire
format (dataplane/wire/dp_wire.h, docs/wire.md).  Run it again whenever the
header changes:

    python3 tests/fuzz/make_corpus.py tests/fuzz/corpus

Each seed is one mode byte (fuzz_frame.c: bit 0 fixes the IPv4 checksum,
the rest picks the receiving rank of its three-worker world) followed by a
whole frame.  'world' (a world map, first byte 0x80 and up) is not made
here: it does not depend on the frame format.
"""
import struct
import sys

MAGIC = 0xD9C1
VERSION = 3
REQUEST, RESPONSE = 1, 2
SESSION = 0x1122334455667788
DST_SESSION = 0x99AABBCCDDEEFF01

# fuzz_frame.c's world: rank -> (mac, ip, udp port)
WORLD = {
    0: (bytes([2, 0, 0, 0, 0, 1]), bytes([10, 0, 0, 1]), 7000),
    1: (bytes([2, 0, 0, 0, 0, 2]), bytes([10, 0, 0, 2]), 7000),
    2: (bytes([2, 0, 0, 0, 0, 3]), bytes([10, 0, 0, 2]), 7001),
}


def csum(data):
    s = 0
    for i in range(0, len(data), 2):
        s += (data[i] << 8) | data[i + 1]
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def dprpc_hdr(ftype, src, dst, slot, req_num, msg_len, handler_id, status):
    # off 0 magic, 2 version, 3 type, 4 flags, 6 src, 8 dst, 10 slot,
    # 12 req_num, 16 session, 24 dst_session, 32 pkt_idx, 34 pkt_cnt,
    # 36 msg_len, 40 handler_id, 44 status, 48 credits, 50 budget,
    # 52 world_id, 56 seq, 64 tag: 72 (a world without a key: all 0)
    h = struct.pack('>HBBHHHHIQQHHIIIHHIQQ', MAGIC, VERSION, ftype, 0, src, dst, slot,
                    req_num, SESSION, DST_SESSION, 0, 1, msg_len, handler_id, status, 0, 0,
                    0, 0, 0)
    assert len(h) == 72
    return h


def frame(eth_src, eth_dst, ip_src, ip_dst, hdr, payload):
    """Ethernet + IPv4 (DF, TTL 64) + UDP (checksum 0) + dprpc header."""
    smac, sip, sport = ip_src
    dmac, dip, dport = ip_dst
    udp_len = 8 + len(hdr) + len(payload)
    ip = bytearray(struct.pack('>BBHHHBBH4s4s', 0x45, 0, 20 + udp_len, 0, 0x4000, 64, 17, 0,
                               sip, dip))
    struct.pack_into('>H', ip, 10, csum(ip))
    eth = WORLD[eth_dst][0] + WORLD[eth_src][0] + struct.pack('>H', 0x0800)
    udp = struct.pack('>HHHH', sport, dport, udp_len, 0)
    return eth + bytes(ip) + udp + hdr + payload


def seeds():
    w = WORLD
    # A request from rank 0 to rank 1 (mode 3: receiver rank 1).
    yield 'request', 3, frame(0, 1, w[0], w[1],
                              dprpc_hdr(REQUEST, 0, 1, 3, 7, 8, 0xABCDEF01, 0), b'payload!')
    # An empty request from rank 1 to rank 0 (mode 1: receiver rank 0).
    yield 'request_empty', 1, frame(1, 0, w[1], w[0],
                                    dprpc_hdr(REQUEST, 1, 0, 3, 7, 0, 0xABCDEF01, 0), b'')
    # An error response claiming rank 2 but sent from rank 0's address.
    yield 'response_error', 3, frame(0, 1, (None, w[0][1], w[2][2]), w[1],
                                     dprpc_hdr(RESPONSE, 2, 1, 3, 7, 10, 0xABCDEF01, 2),
                                     b'no handler')


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else 'tests/fuzz/corpus'
    for name, mode, data in seeds():
        with open(f'{out}/{name}', 'wb') as f:
            f.write(bytes([mode]) + data)


if __name__ == '__main__':
    main()
