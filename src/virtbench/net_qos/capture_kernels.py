"""The compiled loops of capture reading (`pcap`) and flow analysis (`flows`), plain Python.

`virtbench.net_qos.compiled` runs them as a module compiled ahead of time with numba.pycc
(`scripts/build_capture_kernels.py`, run by `scripts/install.sh`: no JIT start-up, numba is not
even imported) or, when that module is missing or was built from another version of this file,
through numba's JIT. They read only inside the buffer (numba does not check bounds): every
offset is compared with the buffer's end before it is read.
"""

# mypy: ignore-errors

from __future__ import annotations

import numpy as np

_MAX_RECORD = 1 << 28  # a bigger record length can only be corruption (libpcap caps at 256 KiB)

HELPERS = ("_u32", "_u16", "_ts_to_ns", "_be16", "_be64", "_key_of")
INLINE = ("_u32", "_u16", "_be16", "_be64")
# {b}: the capture's bytes, a read-only view of an mmap or a bytes object
BYTES = "Array(uint8, 1, 'C', readonly=True)"
SIGNATURES = {
    "walk_classic": "UniTuple(int64, 3)({b}, boolean, int64, boolean, int64[::1], int64[::1], "
                     "int64[::1], int64[::1], int64)",
    "walk_pcapng": "UniTuple(int64, 4)({b}, boolean, int32[::1], int64[::1], int64[::1], "
                    "int64[::1], int64[::1], int64[::1], int32[::1])",
    "assign": "int64[:, ::1]({b}, int64[::1], int64[::1], int32[::1], int32[::1], int32[::1])",
    "flow_sums": "Tuple((int64[::1], int64[::1], int64[::1], int64[::1], int64[::1], "
                  "int64[::1], boolean[::1], boolean[::1]))(int32[::1], int64[::1], int64[::1], "
                  "int64)",
}


def _u32(b, o, big):
    if big:
        return (np.int64(b[o]) << 24) | (np.int64(b[o + 1]) << 16) | (np.int64(b[o + 2]) << 8) \
            | np.int64(b[o + 3])
    return (np.int64(b[o + 3]) << 24) | (np.int64(b[o + 2]) << 16) | (np.int64(b[o + 1]) << 8) \
        | np.int64(b[o])


def _u16(b, o, big):
    if big:
        return (np.int64(b[o]) << 8) | np.int64(b[o + 1])
    return (np.int64(b[o + 1]) << 8) | np.int64(b[o])


def walk_classic(b, big, hdr, fill, ts, orig, cap, off, scale):
    """Count the records or (``fill``) fill the arrays; returns (n, stop byte, reason)."""
    size = b.size
    o = 24
    n = 0
    while o + hdr <= size:
        c = _u32(b, o + 8, big)
        if c > _MAX_RECORD:
            return n, o, 2
        if o + hdr + c > size:
            return n, o, 1
        if fill:
            if n >= ts.size:
                break
            ts[n] = _u32(b, o, big) * 1_000_000_000 + _u32(b, o + 4, big) * scale
            cap[n] = c
            orig[n] = _u32(b, o + 12, big)
            off[n] = o + hdr
        n += 1
        o += hdr + c
    if o < size:
        return n, o, 1
    return n, o, 0


def _ts_to_ns(units, res, offset_s):
    """pcapng timestamp units → ns: res is if_tsresol (MSB set: 2^-x s, else 10^-x s)."""
    if res & 0x80:
        shift = res & 0x7F
        if shift == 0:
            whole = units
            frac = 0
        else:
            whole = units >> shift
            frac = ((units & ((np.int64(1) << shift) - 1)) * 1_000_000_000) >> shift
        return (whole + offset_s) * 1_000_000_000 + frac
    if res <= 9:
        return units * 10 ** (9 - res) + offset_s * 1_000_000_000
    return units // 10 ** (res - 9) + offset_s * 1_000_000_000


def walk_pcapng(b, fill, if_link, if_snap, ts, orig, cap, off, iface):
    """Count packets or (``fill``) fill the arrays; returns (n, interfaces, stop, reason).

    Interfaces of all sections are numbered in turn; a section's own ids are relative to
    ``base``, the number of interfaces before it.
    """
    size = b.size
    if_res = np.full(if_link.size, 6, np.int64)
    if_offset = np.zeros(if_link.size, np.int64)
    o = 0
    n = 0
    n_if = 0
    base = 0
    big = False
    while o + 12 <= size:
        btype = _u32(b, o, big)
        if btype == 0x0A0D0D0A:  # section header: settles the byte order of what follows
            bom = _u32(b, o + 8, False)
            if bom == 0x1A2B3C4D:
                big = False
            elif bom == 0x4D3C2B1A:
                big = True
            else:
                return n, n_if, o, 5
            base = n_if
        blen = _u32(b, o + 4, big)
        if blen < 12 or blen % 4 != 0 or blen > _MAX_RECORD:
            return n, n_if, o, 3
        if o + blen > size:
            return n, n_if, o, 1
        if _u32(b, o + blen - 4, big) != blen:
            return n, n_if, o, 3
        body = o + 8
        body_end = o + blen - 4
        if btype == 1:  # interface description
            if blen < 20 or n_if >= if_link.size:
                return n, n_if, o, 3
            if_link[n_if] = _u16(b, body, big)
            if_snap[n_if] = _u32(b, body + 4, big)
            p = body + 8
            while p + 4 <= body_end:  # options: if_tsresol (9), if_tsoffset (14)
                code = _u16(b, p, big)
                olen = _u16(b, p + 2, big)
                if code == 0 or p + 4 + olen > body_end:
                    break
                if code == 9 and olen >= 1:
                    if_res[n_if] = b[p + 4]
                elif code == 14 and olen >= 8:
                    hi = _u32(b, p + 4, big)
                    lo = _u32(b, p + 8, big)
                    if_offset[n_if] = (hi << 32) | lo if big else (lo << 32) | hi
                p += 4 + ((olen + 3) // 4) * 4
            n_if += 1
        elif btype == 6 or btype == 2:  # enhanced packet / obsolete packet block
            if blen < 32:
                return n, n_if, o, 3
            local = _u32(b, body, big) if btype == 6 else _u16(b, body, big)
            c = _u32(b, body + 12, big)
            if c > blen - 32:
                return n, n_if, o, 3
            g = base + local
            if g >= n_if:
                return n, n_if, o, 4
            if fill:
                if n >= ts.size:
                    break
                units = (_u32(b, body + 4, big) << 32) | _u32(b, body + 8, big)
                ts[n] = _ts_to_ns(units, if_res[g], if_offset[g])
                orig[n] = _u32(b, body + 16, big)
                cap[n] = c
                off[n] = body + 20
                iface[n] = g
            n += 1
        elif btype == 3:  # simple packet: no timestamp, interface 0 of the section
            if blen < 16:
                return n, n_if, o, 3
            if base >= n_if:
                return n, n_if, o, 4
            wire = _u32(b, body, big)
            c = min(wire, blen - 16)
            if if_snap[base] > 0:
                c = min(c, if_snap[base])
            if fill:
                if n >= ts.size:
                    break
                ts[n] = -9223372036854775807 - 1
                orig[n] = wire
                cap[n] = c
                off[n] = body + 4
                iface[n] = base
            n += 1
        o += blen
    if o < size:
        return n, n_if, o, 1
    return n, n_if, o, 0


def _be16(b, o):
    return (np.int64(b[o]) << 8) | np.int64(b[o + 1])


def _be64(b, o):
    v = np.int64(0)
    for i in range(8):
        v = (v << 8) | np.int64(b[o + i])
    return v


def _key_of(b, o, end, link, key):
    """Fill key (src_hi, src_lo, dst_hi, dst_lo, meta) of the packet in b[o:end]; all zero for
    a packet that is not IP or is cut before its addresses."""
    key[:] = 0
    ethertype = -1
    if link == 1:  # Ethernet, up to two VLAN tags
        if end - o < 14:
            return
        ethertype = _be16(b, o + 12)
        o += 14
        for _ in range(2):
            if (ethertype == 0x8100 or ethertype == 0x88A8) and end - o >= 4:
                ethertype = _be16(b, o + 2)
                o += 4
    elif link == 113:  # Linux cooked v1
        if end - o < 16:
            return
        ethertype = _be16(b, o + 14)
        o += 16
    elif link == 276:  # Linux cooked v2
        if end - o < 20:
            return
        ethertype = _be16(b, o)
        o += 20
    elif link == 0 or link == 108:  # BSD loopback: address family, host or network order
        if end - o < 4:
            return
        fam = np.int64(b[o]) | np.int64(b[o + 3])
        o += 4
        ethertype = 0x0800 if fam == 2 else (0x86DD if fam in (24, 28, 30) else -1)
    elif link == 101 or link == 12 or link == 14 or link == 228 or link == 229:  # raw IP
        if end - o < 1:
            return
        v = b[o] >> 4
        ethertype = 0x0800 if v == 4 else (0x86DD if v == 6 else -1)
    if ethertype == 0x0800:
        if end - o < 20:
            return
        ihl = (np.int64(b[o]) & 0xF) * 4
        proto = np.int64(b[o + 9])
        key[1] = (np.int64(b[o + 12]) << 24) | (np.int64(b[o + 13]) << 16) \
            | (np.int64(b[o + 14]) << 8) | np.int64(b[o + 15])
        key[3] = (np.int64(b[o + 16]) << 24) | (np.int64(b[o + 17]) << 16) \
            | (np.int64(b[o + 18]) << 8) | np.int64(b[o + 19])
        first_fragment = (_be16(b, o + 6) & 0x1FFF) == 0
        version = 4
        l4 = o + ihl
    elif ethertype == 0x86DD:
        if end - o < 40:
            return
        proto = np.int64(b[o + 6])
        key[0] = _be64(b, o + 8)
        key[1] = _be64(b, o + 16)
        key[2] = _be64(b, o + 24)
        key[3] = _be64(b, o + 32)
        version = 6
        l4 = o + 40
        first_fragment = True
        for _ in range(8):  # extension headers: hop-by-hop, routing, fragment, destination
            if proto == 44:
                if end - l4 < 8:
                    break
                first_fragment = (_be16(b, l4 + 2) & 0xFFF8) == 0
                proto = np.int64(b[l4])
                l4 += 8
            elif proto == 0 or proto == 43 or proto == 60:
                if end - l4 < 8:
                    break
                proto_next = np.int64(b[l4])
                l4 += (np.int64(b[l4 + 1]) + 1) * 8
                proto = proto_next
            else:
                break
    else:
        return
    sport = 0
    dport = 0
    if first_fragment and (proto == 6 or proto == 17 or proto == 132 or proto == 136) \
            and end - l4 >= 4:
        sport = _be16(b, l4)
        dport = _be16(b, l4 + 2)
    key[4] = (np.int64(version) << 40) | (proto << 32) | (sport << 16) | dport


def assign(b, data_off, cap_len, iface, if_link, flow_id):
    """Flow id of every packet (in flow_id); returns the keys of the flows, by id."""
    n = data_off.size
    cap = 1024
    table = np.full(cap, -1, np.int64)  # hash slot -> flow id
    keys = np.empty((64, 5), np.int64)
    n_flows = 0
    key = np.zeros(5, np.int64)
    last = np.full(5, -1, np.int64)
    last_id = -1
    for i in range(n):
        o = data_off[i]
        _key_of(b, o, o + cap_len[i], if_link[iface[i]], key)
        if last_id >= 0 and key[0] == last[0] and key[1] == last[1] and key[2] == last[2] \
                and key[3] == last[3] and key[4] == last[4]:
            flow_id[i] = last_id
            continue
        h = np.int64(0x51ED270B27A2B3C5)
        for j in range(5):
            h = (h ^ key[j]) * np.int64(0x100000001B3)
            h ^= h >> 29
        slot = h & (cap - 1)
        while True:
            f = table[slot]
            if f < 0:
                if n_flows == keys.shape[0]:
                    grown = np.empty((keys.shape[0] * 2, 5), np.int64)
                    grown[:n_flows] = keys[:n_flows]
                    keys = grown
                keys[n_flows] = key
                table[slot] = n_flows
                f = n_flows
                n_flows += 1
                if n_flows * 2 > cap:  # keep the table at most half full
                    cap *= 2
                    table = np.full(cap, -1, np.int64)
                    for k in range(n_flows):
                        hk = np.int64(0x51ED270B27A2B3C5)
                        for j in range(5):
                            hk = (hk ^ keys[k, j]) * np.int64(0x100000001B3)
                            hk ^= hk >> 29
                        s = hk & (cap - 1)
                        while table[s] >= 0:
                            s = (s + 1) & (cap - 1)
                        table[s] = k
                break
            if keys[f, 0] == key[0] and keys[f, 1] == key[1] and keys[f, 2] == key[2] \
                    and keys[f, 3] == key[3] and keys[f, 4] == key[4]:
                break
            slot = (slot + 1) & (cap - 1)
        flow_id[i] = f
        last[:] = key
        last_id = f
    return keys[:n_flows].copy()


def flow_sums(flow_id, ts, wire, n_flows):
    """Per flow: packets, bytes, earliest and latest ts, Σ gap and Σ |Δ gap| (ns) in file order,
    whether its timestamps never go back (then the sums are the studies' sorted ones), and
    whether every packet has a timestamp."""
    packets = np.zeros(n_flows, np.int64)
    nbytes = np.zeros(n_flows, np.int64)
    first = np.zeros(n_flows, np.int64)
    last = np.zeros(n_flows, np.int64)
    prev = np.zeros(n_flows, np.int64)
    gap_sum = np.zeros(n_flows, np.int64)
    dgap_sum = np.zeros(n_flows, np.int64)
    prev_gap = np.zeros(n_flows, np.int64)
    ordered = np.ones(n_flows, np.bool_)
    timed = np.ones(n_flows, np.bool_)
    no_time = -9223372036854775807 - 1
    for i in range(flow_id.size):
        f = flow_id[i]
        t = ts[i]
        nbytes[f] += wire[i]
        packets[f] += 1
        if t == no_time:
            timed[f] = False
            continue
        if packets[f] == 1:
            first[f] = t
            last[f] = t
        else:
            gap = t - prev[f]
            if gap < 0:
                ordered[f] = False
            first[f] = min(first[f], t)
            last[f] = max(last[f], t)
            gap_sum[f] += gap
            if packets[f] >= 3:
                d = gap - prev_gap[f]
                dgap_sum[f] += d if d >= 0 else -d
            prev_gap[f] = gap
        prev[f] = t
    return packets, nbytes, first, last, gap_sum, dgap_sum, ordered, timed
