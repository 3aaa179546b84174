/* virtbench's capture decoder: one walk over a capture's bytes (classic pcap, pcapng), the
 * decoding of each packet's link and IP headers into a 5-tuple, and the sums of every flow.
 *
 * The walk hands each packet to one of two sinks:
 * - scan(): the packet joins its flow's row of a hash table (counts, first/last time, the
 *   studies' integer sums of gaps), so `virtbench parse pcap` needs no per-packet array and no
 *   numpy, and starts and runs in less time than `tcpdump -r FILE -w /dev/null` (BENCHMARKS.md,
 *   "capture analysis speed"); it can also write each packet's flow id into a buffer;
 * - records(): the packet's timestamp, lengths, offset and interface go into buffers the caller
 *   made (numpy arrays: virtbench.net_qos.pcap, the labs' per-packet reader).
 * Checked against tshark on real captures and against hand-built ones in
 * tests/unit/net_qos/test_pcap.py and tests/unit/net_qos/test_capscan.py.
 *
 * Every read is checked against the end of the buffer first: a damaged file stops the walk
 * (reason codes, worded by virtbench.net_qos.capture_file: 1 cut short, 2 impossible record
 * length, 3 malformed pcapng block, 4 unknown interface, 5 unknown byte-order magic), never a
 * read outside it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RECORD ((int64_t)1 << 28)
#define MAX_INTERFACES (1 << 16)
#define NO_TIME INT64_MIN

/* A flow's timestamps reach its sums in time order through a window of the last WINDOW ones:
 * a capture on several CPUs puts a packet a place or two after a later one (seen here in every
 * TCP capture), and the studies' formulas sort. A timestamp earlier than one already summed
 * "spills" the flow: a second pass then sorts all of its timestamps. */
#define WINDOW 4 /* a power of two */

typedef struct {
    uint64_t key[5];
    int64_t packets, bytes, first, last;
    int64_t window[WINDOW]; /* ring, ascending from head */
    int64_t head, held;     /* index of the earliest, number held */
    int64_t summed, prev, prev_gap, gap_sum, dgap_sum; /* over the timestamps in time order */
    int spilled, timed;
    int64_t *times; /* second pass only: the flow's timestamps, to sort */
    int64_t n_times;
} Flow;

typedef struct {
    Flow *flows;
    int64_t n_flows, flows_cap;
    int64_t *table; /* hash slot -> flow id, -1 = empty */
    int64_t table_cap;
    uint64_t last_key[5];
    int64_t last_id;
    int collect; /* second pass: record the timestamps of the flows marked for sorting */
    int failed;  /* out of memory */
} Flows;

typedef struct {
    int64_t n, n_if, stop, reason;
    int32_t *if_link; /* pcapng: each interface's link type and snap length (n_if of them) */
    int64_t *if_snap;
} Walk;

/* Where the walk hands each packet: into the flows (scan) or into per-packet arrays (records). */
typedef struct {
    Flows *fs;          /* scan: the flows; NULL for records */
    int32_t *flow_ids;  /* scan, optional: each packet's flow id */
    int64_t *ts, *orig, *cap, *off; /* records: the per-packet arrays */
    int32_t *iface;
    int64_t room; /* packets the arrays hold */
    int64_t n;    /* packets handed so far */
} Sink;

static inline int64_t u32(const uint8_t *b, int64_t o, int big) {
    if (big)
        return ((int64_t)b[o] << 24) | ((int64_t)b[o + 1] << 16) | ((int64_t)b[o + 2] << 8) | b[o + 3];
    return ((int64_t)b[o + 3] << 24) | ((int64_t)b[o + 2] << 16) | ((int64_t)b[o + 1] << 8) | b[o];
}

static inline int64_t u16(const uint8_t *b, int64_t o, int big) {
    if (big)
        return ((int64_t)b[o] << 8) | b[o + 1];
    return ((int64_t)b[o + 1] << 8) | b[o];
}

static inline int64_t be16(const uint8_t *b, int64_t o) { return ((int64_t)b[o] << 8) | b[o + 1]; }

static inline uint64_t be64(const uint8_t *b, int64_t o) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | b[o + i];
    return v;
}

/* The 5-tuple key: all zero for a packet that is not IP or is cut before its addresses */
static void key_of(const uint8_t *b, int64_t o, int64_t end, int64_t link, uint64_t key[5]) {
    int64_t ethertype = -1, proto, l4, version;
    int first_fragment;
    memset(key, 0, 5 * sizeof(uint64_t));
    if (link == 1) {
        if (end - o < 14)
            return;
        ethertype = be16(b, o + 12);
        o += 14;
        for (int i = 0; i < 2; i++)
            if ((ethertype == 0x8100 || ethertype == 0x88A8) && end - o >= 4) {
                ethertype = be16(b, o + 2);
                o += 4;
            }
    } else if (link == 113) {
        if (end - o < 16)
            return;
        ethertype = be16(b, o + 14);
        o += 16;
    } else if (link == 276) {
        if (end - o < 20)
            return;
        ethertype = be16(b, o);
        o += 20;
    } else if (link == 0 || link == 108) {
        if (end - o < 4)
            return;
        int64_t fam = (int64_t)b[o] | b[o + 3];
        o += 4;
        ethertype = fam == 2 ? 0x0800 : ((fam == 24 || fam == 28 || fam == 30) ? 0x86DD : -1);
    } else if (link == 101 || link == 12 || link == 14 || link == 228 || link == 229) {
        if (end - o < 1)
            return;
        int v = b[o] >> 4;
        ethertype = v == 4 ? 0x0800 : (v == 6 ? 0x86DD : -1);
    }
    if (ethertype == 0x0800) {
        if (end - o < 20)
            return;
        int64_t ihl = (int64_t)(b[o] & 0xF) * 4;
        proto = b[o + 9];
        key[1] = (uint64_t)u32(b, o + 12, 1);
        key[3] = (uint64_t)u32(b, o + 16, 1);
        first_fragment = (be16(b, o + 6) & 0x1FFF) == 0;
        version = 4;
        l4 = o + ihl;
    } else if (ethertype == 0x86DD) {
        if (end - o < 40)
            return;
        proto = b[o + 6];
        key[0] = be64(b, o + 8);
        key[1] = be64(b, o + 16);
        key[2] = be64(b, o + 24);
        key[3] = be64(b, o + 32);
        version = 6;
        l4 = o + 40;
        first_fragment = 1;
        for (int i = 0; i < 8; i++) { /* hop-by-hop, routing, fragment, destination options */
            if (proto == 44) {
                if (end - l4 < 8)
                    break;
                first_fragment = (be16(b, l4 + 2) & 0xFFF8) == 0;
                proto = b[l4];
                l4 += 8;
            } else if (proto == 0 || proto == 43 || proto == 60) {
                if (end - l4 < 8)
                    break;
                int64_t next = b[l4];
                l4 += ((int64_t)b[l4 + 1] + 1) * 8;
                proto = next;
            } else {
                break;
            }
        }
    } else {
        return;
    }
    int64_t sport = 0, dport = 0;
    if (first_fragment && (proto == 6 || proto == 17 || proto == 132 || proto == 136) &&
        end - l4 >= 4) {
        sport = be16(b, l4);
        dport = be16(b, l4 + 2);
    }
    key[4] = ((uint64_t)version << 40) | ((uint64_t)proto << 32) | ((uint64_t)sport << 16) |
             (uint64_t)dport;
}

static inline uint64_t hash_key(const uint64_t key[5]) {
    uint64_t h = 0x51ED270B27A2B3C5ULL;
    for (int j = 0; j < 5; j++) {
        h = (h ^ key[j]) * 0x100000001B3ULL;
        h ^= h >> 29;
    }
    return h;
}

static inline int same_key(const uint64_t a[5], const uint64_t b[5]) {
    return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3] && a[4] == b[4];
}

static int grow_table(Flows *fs) {
    int64_t cap = fs->table_cap * 2;
    int64_t *table = malloc((size_t)cap * sizeof(int64_t));
    if (!table)
        return -1;
    memset(table, 0xFF, (size_t)cap * sizeof(int64_t));
    for (int64_t k = 0; k < fs->n_flows; k++) {
        uint64_t s = hash_key(fs->flows[k].key) & (uint64_t)(cap - 1);
        while (table[s] >= 0)
            s = (s + 1) & (uint64_t)(cap - 1);
        table[s] = k;
    }
    free(fs->table);
    fs->table = table;
    fs->table_cap = cap;
    return 0;
}

/* The flow id of key: a new flow (ids in order of first appearance) if it was never seen. */
static int64_t flow_id(Flows *fs, const uint64_t key[5]) {
    if (fs->last_id >= 0 && same_key(key, fs->last_key))
        return fs->last_id;
    uint64_t slot = hash_key(key) & (uint64_t)(fs->table_cap - 1);
    int64_t f;
    for (;;) {
        f = fs->table[slot];
        if (f < 0) {
            if (fs->n_flows == fs->flows_cap) {
                int64_t cap = fs->flows_cap * 2;
                Flow *grown = realloc(fs->flows, (size_t)cap * sizeof(Flow));
                if (!grown)
                    return -1;
                fs->flows = grown;
                fs->flows_cap = cap;
            }
            f = fs->n_flows++;
            Flow *fl = &fs->flows[f];
            memset(fl, 0, sizeof(Flow));
            memcpy(fl->key, key, sizeof(fl->key));
            fl->timed = 1;
            fs->table[slot] = f;
            if (fs->n_flows * 2 > fs->table_cap && grow_table(fs) < 0) /* at most half full */
                return -1;
            break;
        }
        if (same_key(fs->flows[f].key, key))
            break;
        slot = (slot + 1) & (uint64_t)(fs->table_cap - 1);
    }
    memcpy(fs->last_key, key, sizeof(fs->last_key));
    fs->last_id = f;
    return f;
}

/* The next timestamp of a flow in time order into Σ gap and Σ |Δ gap| (int64 arithmetic that
 * wraps, not undefined overflow). */
static inline void sum_next(Flow *fl, int64_t t) {
    if (fl->summed >= 1) {
        int64_t gap = (int64_t)((uint64_t)t - (uint64_t)fl->prev);
        fl->gap_sum = (int64_t)((uint64_t)fl->gap_sum + (uint64_t)gap);
        if (fl->summed >= 2) {
            int64_t d = (int64_t)((uint64_t)gap - (uint64_t)fl->prev_gap);
            uint64_t abs_d = d >= 0 ? (uint64_t)d : 0 - (uint64_t)d;
            fl->dgap_sum = (int64_t)((uint64_t)fl->dgap_sum + abs_d);
        }
        fl->prev_gap = gap;
    }
    fl->prev = t;
    fl->summed++;
}

/* One packet into its flow's sums; in the second pass, keep the timestamps of the spilled
 * flows. Returns the flow id, -1 when out of memory. */
static int64_t on_packet(Flows *fs, const uint8_t *b, int64_t data, int64_t cap, int64_t link,
                         int64_t t, int64_t wire) {
    uint64_t key[5];
    key_of(b, data, data + cap, link, key);
    int64_t f = flow_id(fs, key);
    if (f < 0) {
        fs->failed = 1;
        return -1;
    }
    Flow *fl = &fs->flows[f];
    if (fs->collect) {
        if (fl->times)
            fl->times[fl->n_times++] = t;
        return f;
    }
    fl->bytes += wire;
    fl->packets += 1;
    if (t == NO_TIME) {
        fl->timed = 0;
        return f;
    }
    if (fl->packets == 1) {
        fl->first = t;
        fl->last = t;
    } else {
        if (t < fl->first)
            fl->first = t;
        if (t > fl->last)
            fl->last = t;
    }
    if (fl->held == WINDOW) { /* the earliest leaves the window */
        sum_next(fl, fl->window[fl->head & (WINDOW - 1)]);
        fl->head++;
        fl->held--;
    }
    if (fl->summed > 0 && t < fl->prev)
        fl->spilled = 1;
    int64_t pos = fl->head + fl->held; /* insertion from the end: one comparison in order */
    while (pos > fl->head && fl->window[(pos - 1) & (WINDOW - 1)] > t) {
        fl->window[pos & (WINDOW - 1)] = fl->window[(pos - 1) & (WINDOW - 1)];
        pos--;
    }
    fl->window[pos & (WINDOW - 1)] = t;
    fl->held++;
    return f;
}

/* A packet to the sink: stored bytes b[data:data + cap] of interface iface (link type link),
 * time t (NO_TIME: none), wire length wire. Nonzero: stop the walk (out of memory, or the
 * arrays are full). */
static inline int emit(Sink *s, const uint8_t *b, int64_t data, int64_t cap, int64_t link,
                       int64_t t, int64_t wire, int64_t iface) {
    if (s->fs) {
        int64_t f = on_packet(s->fs, b, data, cap, link, t, wire);
        if (f < 0)
            return 1;
        if (s->flow_ids && s->n < s->room)
            s->flow_ids[s->n] = (int32_t)f;
    } else {
        if (s->n >= s->room)
            return 1;
        s->ts[s->n] = t;
        s->orig[s->n] = wire;
        s->cap[s->n] = cap;
        s->off[s->n] = data;
        s->iface[s->n] = (int32_t)iface;
    }
    s->n++;
    return 0;
}

/* The rest of every flow's window into its sums, once the walk is over. */
static void flush_windows(Flows *fs) {
    for (int64_t i = 0; i < fs->n_flows; i++) {
        Flow *fl = &fs->flows[i];
        for (; fl->held > 0; fl->held--, fl->head++)
            sum_next(fl, fl->window[fl->head & (WINDOW - 1)]);
    }
}

static void walk_classic(const uint8_t *b, int64_t size, int big, int64_t hdr, int64_t scale,
                         int64_t link, Sink *s, Walk *w) {
    int64_t o = 24, n = 0;
    w->reason = 0;
    while (o + hdr <= size) {
        int64_t c = u32(b, o + 8, big);
        if (c > MAX_RECORD) {
            w->reason = 2;
            break;
        }
        if (o + hdr + c > size) {
            w->reason = 1;
            break;
        }
        int64_t ts = (int64_t)((uint64_t)u32(b, o, big) * 1000000000ULL +
                               (uint64_t)u32(b, o + 4, big) * (uint64_t)scale);
        if (emit(s, b, o + hdr, c, link, ts, u32(b, o + 12, big), 0)) {
            w->reason = 1;
            break;
        }
        n++;
        o += hdr + c;
    }
    if (w->reason == 0 && o < size)
        w->reason = 1;
    w->n = n;
    w->n_if = 1;
    w->stop = o;
}

static uint64_t pow10_wrapping(int64_t e) {
    uint64_t v = 1;
    for (int64_t i = 0; i < e; i++)
        v *= 10;
    return v;
}

/* pcapng timestamp units -> ns: res is if_tsresol (MSB set: 2^-x s, else 10^-x s) */
static int64_t ts_to_ns(int64_t units, int64_t res, int64_t offset_s) {
    if (res & 0x80) {
        int64_t shift = res & 0x7F, whole, frac;
        if (shift == 0) {
            whole = units;
            frac = 0;
        } else if (shift >= 64) { /* resolution finer than 2^-63 s: no whole seconds */
            whole = units < 0 ? -1 : 0;
            frac = 0;
        } else {
            whole = units >> shift;
            uint64_t low = (uint64_t)units & (((uint64_t)1 << shift) - 1);
            frac = (int64_t)(low * 1000000000ULL) >> shift;
        }
        return (int64_t)(((uint64_t)whole + (uint64_t)offset_s) * 1000000000ULL + (uint64_t)frac);
    }
    if (res <= 9)
        return (int64_t)((uint64_t)units * pow10_wrapping(9 - res) +
                         (uint64_t)offset_s * 1000000000ULL);
    int64_t div = (int64_t)pow10_wrapping(res - 9), q;
    if (div == 0 || (div == -1 && units == INT64_MIN)) {
        q = 0;
    } else { /* Python's floor division */
        q = units / div;
        if ((units % div != 0) && ((units < 0) != (div < 0)))
            q -= 1;
    }
    return (int64_t)((uint64_t)q + (uint64_t)offset_s * 1000000000ULL);
}

static int walk_pcapng(const uint8_t *b, int64_t size, Sink *s, Walk *w) {
    int32_t *if_link = malloc(MAX_INTERFACES * sizeof(int32_t));
    int64_t *if_snap = malloc(MAX_INTERFACES * sizeof(int64_t));
    int64_t *if_res = malloc(MAX_INTERFACES * sizeof(int64_t));
    int64_t *if_offset = malloc(MAX_INTERFACES * sizeof(int64_t));
    if (!if_link || !if_snap || !if_res || !if_offset) {
        free(if_link);
        free(if_snap);
        free(if_res);
        free(if_offset);
        return -1;
    }
    int64_t o = 0, n = 0, n_if = 0, base = 0, reason = 0;
    int big = 0;
    while (o + 12 <= size) {
        int64_t btype = u32(b, o, big);
        if (btype == 0x0A0D0D0A) { /* section header: settles the byte order of what follows */
            int64_t bom = u32(b, o + 8, 0);
            if (bom == 0x1A2B3C4D) {
                big = 0;
            } else if (bom == 0x4D3C2B1A) {
                big = 1;
            } else {
                reason = 5;
                break;
            }
            base = n_if;
        }
        int64_t blen = u32(b, o + 4, big);
        if (blen < 12 || blen % 4 != 0 || blen > MAX_RECORD) {
            reason = 3;
            break;
        }
        if (o + blen > size) {
            reason = 1;
            break;
        }
        if (u32(b, o + blen - 4, big) != blen) {
            reason = 3;
            break;
        }
        int64_t body = o + 8, body_end = o + blen - 4;
        if (btype == 1) { /* interface description */
            if (blen < 20 || n_if >= MAX_INTERFACES) {
                reason = 3;
                break;
            }
            if_link[n_if] = (int32_t)u16(b, body, big);
            if_snap[n_if] = u32(b, body + 4, big);
            if_res[n_if] = 6;
            if_offset[n_if] = 0;
            int64_t p = body + 8;
            while (p + 4 <= body_end) { /* options: if_tsresol (9), if_tsoffset (14) */
                int64_t code = u16(b, p, big), olen = u16(b, p + 2, big);
                if (code == 0 || p + 4 + olen > body_end)
                    break;
                if (code == 9 && olen >= 1) {
                    if_res[n_if] = b[p + 4];
                } else if (code == 14 && olen >= 8) {
                    uint64_t hi = (uint64_t)u32(b, p + 4, big), lo = (uint64_t)u32(b, p + 8, big);
                    if_offset[n_if] = (int64_t)(big ? (hi << 32) | lo : (lo << 32) | hi);
                }
                p += 4 + ((olen + 3) / 4) * 4;
            }
            n_if++;
        } else if (btype == 6 || btype == 2) { /* enhanced packet / obsolete packet block */
            if (blen < 32) {
                reason = 3;
                break;
            }
            int64_t local = btype == 6 ? u32(b, body, big) : u16(b, body, big);
            int64_t c = u32(b, body + 12, big);
            if (c > blen - 32) {
                reason = 3;
                break;
            }
            int64_t g = base + local;
            if (g >= n_if) {
                reason = 4;
                break;
            }
            int64_t units = (int64_t)(((uint64_t)u32(b, body + 4, big) << 32) |
                                      (uint64_t)u32(b, body + 8, big));
            if (emit(s, b, body + 20, c, if_link[g], ts_to_ns(units, if_res[g], if_offset[g]),
                     u32(b, body + 16, big), g)) {
                reason = 1;
                break;
            }
            n++;
        } else if (btype == 3) { /* simple packet: no timestamp, interface 0 of the section */
            if (blen < 16) {
                reason = 3;
                break;
            }
            if (base >= n_if) {
                reason = 4;
                break;
            }
            int64_t wire = u32(b, body, big);
            int64_t c = wire < blen - 16 ? wire : blen - 16;
            if (if_snap[base] > 0 && if_snap[base] < c)
                c = if_snap[base];
            if (emit(s, b, body + 4, c, if_link[base], NO_TIME, wire, base)) {
                reason = 1;
                break;
            }
            n++;
        }
        o += blen;
    }
    if (reason == 0 && o < size)
        reason = 1;
    w->n = n;
    w->n_if = n_if;
    w->stop = o;
    w->reason = reason;
    w->if_link = if_link;
    w->if_snap = if_snap;
    free(if_res);
    free(if_offset);
    return 0;
}

static void free_walk(Walk *w) {
    free(w->if_link);
    free(w->if_snap);
    w->if_link = NULL;
    w->if_snap = NULL;
}

/* The walk of a whole capture into the sink; -1 when out of memory. */
static int walk(const uint8_t *b, int64_t size, int pcapng, int big, int64_t hdr, int64_t scale,
                int64_t link, Sink *s, Walk *w) {
    s->n = 0;
    if (s->fs)
        s->fs->last_id = -1;
    if (pcapng)
        return walk_pcapng(b, size, s, w);
    walk_classic(b, size, big, hdr, scale, link, s, w);
    return 0;
}

static int cmp_int64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Sort timestamps that are nearly in order (a capture on several CPUs: a few go back a little)
 * by insertion, linear in their number plus the distance moved; past a budget of moves, by
 * qsort. */
static void sort_times(int64_t *t, int64_t n) {
    int64_t budget = 16 * n + 4096;
    for (int64_t i = 1; i < n; i++) {
        int64_t v = t[i], j = i;
        while (j > 0 && t[j - 1] > v) {
            t[j] = t[j - 1];
            j--;
        }
        t[j] = v;
        budget -= i - j;
        if (budget < 0) {
            qsort(t, (size_t)n, sizeof(int64_t), cmp_int64);
            return;
        }
    }
}

/* Σ gap and Σ |Δ gap| of the sorted timestamps of the spilled flows, as flows._sorted_sums: a
 * second walk collects them. */
static int sort_unordered(const uint8_t *b, int64_t size, int pcapng, int big, int64_t hdr,
                          int64_t scale, int64_t link, Flows *fs) {
    int any = 0;
    for (int64_t i = 0; i < fs->n_flows; i++) {
        Flow *fl = &fs->flows[i];
        if (fl->spilled && fl->timed && fl->packets >= 3) {
            fl->times = malloc((size_t)fl->packets * sizeof(int64_t));
            if (!fl->times)
                return -1;
            any = 1;
        }
    }
    if (!any)
        return 0;
    Walk w = {0};
    Sink sink = {.fs = fs};
    fs->collect = 1;
    int bad = walk(b, size, pcapng, big, hdr, scale, link, &sink, &w) < 0 || fs->failed;
    free_walk(&w);
    if (bad)
        return -1;
    for (int64_t i = 0; i < fs->n_flows; i++) {
        Flow *fl = &fs->flows[i];
        if (!fl->times)
            continue;
        sort_times(fl->times, fl->n_times);
        fl->summed = fl->gap_sum = fl->dgap_sum = 0;
        for (int64_t k = 0; k < fl->n_times; k++)
            sum_next(fl, fl->times[k]);
    }
    return 0;
}

static PyObject *flows_list(const Flows *fs) {
    PyObject *out = PyList_New((Py_ssize_t)fs->n_flows);
    if (!out)
        return NULL;
    for (int64_t i = 0; i < fs->n_flows; i++) {
        const Flow *fl = &fs->flows[i];
        PyObject *item = Py_BuildValue(
            "((KKKKK)LLLLLLO)", (unsigned long long)fl->key[0], (unsigned long long)fl->key[1],
            (unsigned long long)fl->key[2], (unsigned long long)fl->key[3],
            (unsigned long long)fl->key[4], (long long)fl->packets, (long long)fl->bytes,
            (long long)fl->first, (long long)fl->last, (long long)fl->gap_sum,
            (long long)fl->dgap_sum, fl->timed ? Py_True : Py_False);
        if (!item) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, item);
    }
    return out;
}

static void free_flows(Flows *fs) {
    if (fs->flows)
        for (int64_t i = 0; i < fs->n_flows; i++)
            free(fs->flows[i].times);
    free(fs->flows);
    free(fs->table);
}

PyDoc_STRVAR(scan_doc,
             "scan(buffer, pcapng, big, record_header, scale, linktype, flow_ids=None)\n"
             "--\n\n"
             "Walk a capture held in ``buffer`` (classic pcap after its 24-byte header, with\n"
             "``big`` byte order, records of ``record_header`` bytes, ``scale`` ns per fraction\n"
             "unit and link type ``linktype``; or, when ``pcapng``, a pcapng file from byte 0).\n"
             "Returns (packets, interfaces, stop byte, reason, flows): reason 0 = read to the end,\n"
             "else why the walk stopped at the stop byte. flows: in order of first appearance,\n"
             "((src_hi, src_lo, dst_hi, dst_lo, meta), packets, bytes, first ns, last ns,\n"
             "sum of gaps ns, sum of |change of gap| ns, every packet timed), the sums over\n"
             "the flow's timestamps in time order. ``flow_ids``, a writable buffer of int32:\n"
             "each packet's flow id (its index in flows), for as many packets as it holds.");

static int check_header(int pcapng, long long hdr) {
    if (!pcapng && hdr != 16 && hdr != 24) {
        PyErr_SetString(PyExc_ValueError, "record_header: 16 or 24");
        return -1;
    }
    return 0;
}

static PyObject *scan(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"", "", "", "", "", "", "flow_ids", NULL};
    Py_buffer view, ids = {0};
    int pcapng, big;
    long long hdr, scale, link;
    PyObject *ids_obj = Py_None;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*ppLLL|O", keywords, &view, &pcapng, &big,
                                     &hdr, &scale, &link, &ids_obj))
        return NULL;
    if (check_header(pcapng, hdr) < 0 ||
        (ids_obj != Py_None && PyObject_GetBuffer(ids_obj, &ids, PyBUF_WRITABLE) < 0)) {
        PyBuffer_Release(&view);
        return NULL;
    }
    Flows fs = {0};
    fs.flows_cap = 64;
    fs.table_cap = 1024;
    fs.flows = malloc((size_t)fs.flows_cap * sizeof(Flow));
    fs.table = malloc((size_t)fs.table_cap * sizeof(int64_t));
    PyObject *result = NULL;
    Walk w = {0};
    Sink sink = {.fs = &fs, .flow_ids = ids.buf, .room = (int64_t)ids.len / 4};
    if (!fs.flows || !fs.table) {
        PyErr_NoMemory();
        goto done;
    }
    memset(fs.table, 0xFF, (size_t)fs.table_cap * sizeof(int64_t));
    const uint8_t *b = view.buf;
    int64_t size = (int64_t)view.len;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    bad = walk(b, size, pcapng, big, hdr, scale, link, &sink, &w) < 0 || fs.failed;
    if (!bad) {
        flush_windows(&fs);
        bad = sort_unordered(b, size, pcapng, big, hdr, scale, link, &fs) < 0;
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *flows = flows_list(&fs);
    if (flows)
        result = Py_BuildValue("(LLLLN)", (long long)w.n, (long long)w.n_if, (long long)w.stop,
                               (long long)w.reason, flows);
done:
    free_walk(&w);
    free_flows(&fs);
    if (ids.obj)
        PyBuffer_Release(&ids);
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(records_doc,
             "records(buffer, pcapng, big, record_header, scale, linktype, ts, orig, cap, off,\n"
             "        iface)\n"
             "--\n\n"
             "The same walk as scan(), each packet into writable buffers: ``ts`` (int64 ns, the\n"
             "smallest int64 for a packet without a timestamp), ``orig`` (int64 bytes on the\n"
             "wire), ``cap`` (int64 bytes stored), ``off`` (int64 where the stored bytes start in\n"
             "``buffer``) and ``iface`` (int32 interface, all sections numbered in turn; 0 in\n"
             "classic pcap). The walk stops (reason 1) when they are full. Returns (packets,\n"
             "interfaces, stop byte, reason, [(link type, snap length) of each interface]).");

static PyObject *records(PyObject *self, PyObject *args) {
    Py_buffer view, bufs[5];
    int pcapng, big;
    long long hdr, scale, link;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*ppLLLw*w*w*w*w*", &view, &pcapng, &big, &hdr, &scale, &link,
                          &bufs[0], &bufs[1], &bufs[2], &bufs[3], &bufs[4]))
        return NULL;
    PyObject *result = NULL;
    Walk w = {0};
    Sink sink = {.ts = bufs[0].buf, .orig = bufs[1].buf, .cap = bufs[2].buf, .off = bufs[3].buf,
                 .iface = bufs[4].buf, .room = (int64_t)bufs[4].len / 4};
    for (int i = 0; i < 4; i++)
        if ((int64_t)bufs[i].len / 8 < sink.room)
            sink.room = (int64_t)bufs[i].len / 8;
    if (check_header(pcapng, hdr) < 0)
        goto done;
    const uint8_t *b = view.buf;
    int64_t size = (int64_t)view.len;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    bad = walk(b, size, pcapng, big, hdr, scale, link, &sink, &w) < 0;
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *ifaces = PyList_New((Py_ssize_t)(pcapng ? w.n_if : 1));
    if (!ifaces)
        goto done;
    for (int64_t i = 0; i < PyList_GET_SIZE(ifaces); i++) {
        PyObject *item = pcapng ? Py_BuildValue("(iL)", (int)w.if_link[i], (long long)w.if_snap[i])
                                : Py_BuildValue("(Li)", link, 0);
        if (!item) {
            Py_DECREF(ifaces);
            goto done;
        }
        PyList_SET_ITEM(ifaces, (Py_ssize_t)i, item);
    }
    result = Py_BuildValue("(LLLLN)", (long long)w.n, (long long)w.n_if, (long long)w.stop,
                           (long long)w.reason, ifaces);
done:
    free_walk(&w);
    for (int i = 0; i < 5; i++)
        PyBuffer_Release(&bufs[i]);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", (PyCFunction)(void (*)(void))scan, METH_VARARGS | METH_KEYWORDS, scan_doc},
    {"records", records, METH_VARARGS, records_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_capscan",
    "virtbench's capture decoder: a capture's flows or per-packet arrays (see _capscan.c).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__capscan(void) { return PyModule_Create(&module); }
