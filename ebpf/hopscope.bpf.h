/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What every stage program shares: maps, load-time settings, counters, and
 * the way a stage finds its packet's slot. maps.bpf.c defines them (with
 * HS_DEFINE_MAPS), the stage objects see them as externs; bpftool links the
 * objects into one, so there is one copy of each map.
 */
#ifndef HOPSCOPE_BPF_H
#define HOPSCOPE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "hopscope.h"

#ifdef HS_DEFINE_MAPS
#define HS_EXTERN
#define HS_ZERO = {0}
#else
#define HS_EXTERN extern
#define HS_ZERO
#endif

/* Per-packet slots: per CPU a ring of 2^cfg_slot_shift records, indexed by seq. */
HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct hs_record);
	__uint(max_entries, 1);		/* set by the loader: possible CPUs << shift */
} slots SEC(".maps");

HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, HS_C_NCOUNTERS);
} counters SEC(".maps");

/* per-CPU arrival count: seq's low bits (hs_seq) */
HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} seqno SEC(".maps");

/* the hand-over of records (include/hopscope.h, struct hs_ring_pos): per
 * CPU 2^cfg_ring_shift records, and the two positions of each CPU's ring */
HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct hs_record);
	__uint(max_entries, 1);		/* set by the loader: possible CPUs << shift */
} ring SEC(".maps");

HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct hs_ring_pos);
	__uint(max_entries, 1);		/* set by the loader: possible CPUs */
} ring_pos SEC(".maps");

/*
 * t0 (arrival) by packet key: no skb or metadata exists yet at XDP's side.
 * XDP deletes the entry it takes; a packet dropped between netif_rx and XDP
 * (a full backlog) never comes to take its own. An LRU hash lets the oldest
 * such leftovers go as new arrivals come, so the map never fills (it did:
 * after 65536 backlog drops every later t0 was lost as t0_map_full). A
 * leftover pushed out costs nothing; a live entry pushed out (more than
 * max_entries packets between netif_rx and XDP) is a t0_miss, counted.
 *
 * Twins: packets of one key waiting together (identical frames sent back to
 * back) cannot tell whose t0 is whose. The first twin's arrival turns the
 * entry into HS_T0_TWINS | n, n the twins still to reach XDP (a t0 never
 * has the top bit); each twin takes one away, is flagged HS_F_T0_COLL
 * without a t0, and the last deletes the entry. With a plain 0 for "collided"
 * the first twin's XDP deleted the entry and the second found none: it went
 * unflagged, a t0_miss like a lost entry.
 */
#define HS_T0_TWINS (1ull << 63)
struct hs_arrival_key {
	__u32 key;
	__u32 ifindex;
};

HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct hs_arrival_key);
	__type(value, __u64);
	__uint(max_entries, 65536);
} arrivals SEC(".maps");

/*
 * The slot by skb address, for a packet whose metadata is gone: a packet tap
 * (tcpdump) holds a clone of the packet's head, so forwarding copies the head
 * (skb_cow in ip_forward), and the kernel clears the metadata of a copied
 * head. PRE_ROUTING files such a packet here (only when its head is shared,
 * so untapped traffic never pays a hash update); the later stages look here
 * when they find no metadata, once hs_tapped says there is anything to find.
 * A packet whose MAC header moves on the way (an L3 device, a tunnel) is
 * filed too (tunnel.bpf.h). The stage that emits a record deletes its
 * packet's entry; an entry left over (a packet retired where nothing
 * deletes it) points at a slot whose seq moved on, which is stale.
 */
HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, __u64);
	__uint(max_entries, 65536);
} by_skb SEC(".maps");

HS_EXTERN volatile __u32 hs_tapped HS_ZERO;

/* by_skb's value for a tapped packet --sample left out (no seq is all ones) */
#define HS_SEQ_UNSAMPLED (~0ull)

/* --floor=clock: each stage's last clock read, per CPU (kept so that the
 * read is not optimised away; nobody reads it) */
HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, HS_NSTAGES);
} floor_clock SEC(".maps");

/* --sample: t1 traces one packet in this many (0 or 1: every packet).
 * Userspace rewrites it while the programs run (--sample auto), so it is
 * data, not rodata. */
HS_EXTERN volatile __u32 hs_sample_n HS_ZERO;

/* probe cost by stage (include/hopscope.h, struct hs_cost) */
HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct hs_cost);
	__uint(max_entries, HS_NSTAGES);
} cost SEC(".maps");

/*
 * A sampled packet's probe costs, noted by t1 .. t_tceg as each returns and
 * added to `cost` by t4 after its stamp: the sums' update, a few cold cache
 * lines at a low rate, stays out of the packet's delays, which then differ
 * from an unsampled packet's by the exit read and one store. One entry per
 * sampled slot (slot index >> HS_COST_SAMPLE_SHIFT); seq tells whose notes
 * they are.
 */
struct hs_cost_due {
	__u64 seq;
	__u32 ns[HS_NSTAGES];
};

HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct hs_cost_due);
	__uint(max_entries, 1);		/* set by the loader: slots >> HS_COST_SAMPLE_SHIFT */
} cost_due SEC(".maps");


/* stage histograms (include/hopscope.h): a series' index by its key, handed
 * out from hs_hist_next on its first packet; the histograms by index */
HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, __u32);
	__uint(max_entries, HS_HIST_KEYS);
} hist_keys SEC(".maps");

HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct hs_hist_set);
	__uint(max_entries, HS_HIST_KEYS);
} hist SEC(".maps");

/* per CPU, the series last met at each of HS_HIST_CACHE places (by a hash
 * of the key; key 0, no ifindex, is empty): most packets then find their
 * index with an array lookup, which the verifier inlines, not a hash map's
 * helper call. An index never changes once handed out, so no entry goes stale. */
#define HS_HIST_CACHE 16
struct hs_hist_cache {
	__u64 key[HS_HIST_CACHE];
	__u32 idx[HS_HIST_CACHE];
};

HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct hs_hist_cache);
	__uint(max_entries, 1);
} hist_cache SEC(".maps");

/* beside the histograms, the drops by (last stage << 32 | reason): what an
 * aggregate run keeps of its dropped packets' records */
HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__type(key, __u64);
	__type(value, __u64);
	__uint(max_entries, HS_DROP_KEYS);
} drops SEC(".maps");

HS_EXTERN volatile __u64 hs_hist_next HS_ZERO;
/* complete packets of a series that found no index free: in no histogram;
 * drops whose pair found the drops map full */
HS_EXTERN volatile __u64 hs_hist_nokey HS_ZERO;
HS_EXTERN volatile __u64 hs_drops_nokey HS_ZERO;

/* The --in and --out interfaces' ifindexes, in command-line order, 0 after
 * the last: writable, so that the recorder follows an interface deleted and
 * re-created (a new ifindex) without reloading the programs */
HS_EXTERN volatile __u32 hs_in_if[HS_MAX_IFACES] HS_ZERO;
HS_EXTERN volatile __u32 hs_out_if[HS_MAX_IFACES] HS_ZERO;
/* devices on the way to a traced output or back in (hs_config.pass_if):
 * their start_xmit is passed by */
HS_EXTERN volatile __u32 hs_pass_if[HS_MAX_IFACES] HS_ZERO;
/* the inputs whose tc ingress redirects to an ifb (HS_IFP_IFB), 0 after the
 * last: their packets come back to XDP */
HS_EXTERN volatile __u32 hs_again_if[HS_MAX_IFACES] HS_ZERO;

/* flight recorder (include/hopscope.h): per CPU cfg_flight_n entries (the
 * loader sizes it), its place and counts, and the trigger for the recorder */
HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct hs_flight_entry);
	__uint(max_entries, 1);
} flight SEC(".maps");

HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct hs_flight_cpu);
	__uint(max_entries, 1);
} flight_cpu SEC(".maps");

/* set by the recorder while it copies the rings (records then not kept, counted) */
HS_EXTERN volatile __u32 hs_flight_frozen HS_ZERO;
/* taken by the first trigger, so one packet's trigger is written whole */
HS_EXTERN volatile __u64 hs_flight_claim HS_ZERO;
HS_EXTERN struct hs_flight_trigger hs_flight_trig HS_ZERO;

/* Settings fixed at load time (rodata: the verifier prunes what is off). */
HS_EXTERN const volatile __u64 cfg_netns_inum HS_ZERO;
HS_EXTERN const volatile __u32 cfg_slot_shift HS_ZERO;
HS_EXTERN const volatile __u32 cfg_stages HS_ZERO;
HS_EXTERN const volatile __u32 cfg_ring_shift HS_ZERO;
/* --floor (HS_FLOOR_EMPTY, HS_FLOOR_CLOCK): every program returns at once
 * (the verifier drops the rest), so a run measures what the hooks alone
 * cost, the floor no tracer there can beat; or after one clock read, the
 * floor no tracer that stamps can beat */
HS_EXTERN const volatile __u32 cfg_floor HS_ZERO;
/* 0, HS_HIST_RECORDS or HS_HIST_AGGREGATE (no record leaves: the ring is unused) */
HS_EXTERN const volatile __u32 cfg_hist HS_ZERO;
/* --gro keep on some input: the stages from t2 on look for the parts of a
 * batch GRO split (gro.bpf.h) */
HS_EXTERN const volatile __u32 cfg_gro HS_ZERO;

/* --flight: entries per CPU (0: off, the verifier drops the rest); a delay
 * triggers when at least its cfg_flight_over (the threshold + 1 ns; 0: none);
 * a drop when its reason is in cfg_flight_reasons (0 ends the list) */
HS_EXTERN const volatile __u32 cfg_flight_n HS_ZERO;
HS_EXTERN const volatile __u64 cfg_flight_over[HS_NDELAYS] HS_ZERO;
HS_EXTERN const volatile __u32 cfg_flight_reasons[HS_FLIGHT_REASONS] HS_ZERO;

#define HS_READ_ONCE(x) (*(const volatile typeof(x) *)&(x))
/* in a slot's segs from its t2 on, --gro keep: the batch is closed to
 * joiners (gro.bpf.h); the record's segs leaves without it */
#define HS_GRO_CLOSED (1u << 31)

/* Bench-only builds (evaluation/bench/probe_cost.py: make BPF_BENCH=-D...),
 * each leaving one part of the work out to measure what it costs; 0 in the
 * recorder: t1 without the packet key; t4 releasing the slot without
 * handing the record over */
#ifndef HS_BENCH_NO_KEY
#define HS_BENCH_NO_KEY 0
#endif
#ifndef HS_BENCH_NO_HANDOVER
#define HS_BENCH_NO_HANDOVER 0
#endif

#define HS_FLOOR_EXIT(ret) do { if (cfg_floor) return (ret); } while (0)

/* --floor=clock: stage s's one clock read, stored as a tracer would store it */
static __always_inline void hs_floor_clock(enum hs_stage s)
{
	__u32 k = s;
	__u64 *v = bpf_map_lookup_elem(&floor_clock, &k);

	if (v)
		*v = bpf_ktime_get_ns();
}

/* a stamping stage's floor: the clock read (--floor=clock), then out */
#define HS_FLOOR_STAMP_EXIT(s, ret) do {				\
	if (cfg_floor) {						\
		if (cfg_floor == HS_FLOOR_CLOCK)			\
			hs_floor_clock(s);				\
		return (ret);						\
	}								\
} while (0)

static __always_inline void hs_count(__u32 c)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &c);

	if (v)
		(*v)++;
}

/* the packets whose probe cost is sampled, by their seq */
static __always_inline bool hs_cost_sampled(__u64 seq)
{
	return !(seq & ((1u << HS_COST_SAMPLE_SHIFT) - 1));
}

/* one sample of stage s's cost, d ns, into its sums */
static __always_inline void hs_cost_put(enum hs_stage s, __u64 d)
{
	__u64 sq = d < HS_COST_SQ_CAP ? d : HS_COST_SQ_CAP, i = hs_cost_bucket(d);
	__u32 k = s;
	struct hs_cost *c = bpf_map_lookup_elem(&cost, &k);

	if (!c)
		return;
	c->n++;
	c->sum_ns += d;
	c->sum_sq += sq * sq;
	if (d > c->max_ns)
		c->max_ns = d;
	if (i < HS_COST_BUCKETS) {
		/* hidden from the compiler, so the mask that bounds the index
		 * for the verifier stays (HS_COST_BUCKETS: a power of 2) */
		barrier_var(i);
		c->hist[i & (HS_COST_BUCKETS - 1)]++;
	} else {
		c->over++;
	}
}

/* A sampled probe's time from its stamp (entry) to now, its return. */
static __always_inline void hs_cost_add(enum hs_stage s, __u64 entry)
{
	hs_cost_put(s, bpf_ktime_get_ns() - entry);
}

/* the notes of seq's slot (a sampled one) */
static __always_inline struct hs_cost_due *hs_cost_due_of(__u64 seq)
{
	__u32 shift = cfg_slot_shift - HS_COST_SAMPLE_SHIFT;
	__u32 idx = hs_seq_cpu(seq) << shift |
		    ((__u32)seq & ((1u << cfg_slot_shift) - 1)) >> HS_COST_SAMPLE_SHIFT;

	return bpf_map_lookup_elem(&cost_due, &idx);
}

/*
 * A sampled packet's probe at stage s returns: its cost noted for t4 to add.
 * t1 starts the notes (clearing the last packet's). A note may land after
 * the slot changed hands; it then counts as the next sampled packet's, a
 * probe's true cost all the same.
 */
static __always_inline void hs_cost_note(__u64 seq, enum hs_stage s, __u64 entry)
{
	__u64 d = bpf_ktime_get_ns() - entry;
	struct hs_cost_due *due = hs_cost_due_of(seq);

	if (!due)
		return;
	if (s == HS_T1) {
		__builtin_memset(due->ns, 0, sizeof(due->ns));
		due->seq = seq;
	} else if (due->seq != seq) {
		return;
	}
	due->ns[s & (HS_NSTAGES - 1)] = d < 0xffffffffu ? d : 0xffffffffu;
}

/* at t4, after its stamp: the packet's notes into the sums */
static __always_inline void hs_cost_settle(__u64 seq)
{
	struct hs_cost_due *due = hs_cost_due_of(seq);

	if (!due || due->seq != seq)
		return;
#pragma unroll
	for (int s = HS_T1; s < HS_T4; s++)
		if (due->ns[s])
			hs_cost_put(s, due->ns[s]);
	due->seq = 0;
}

static __always_inline bool hs_stage_on(enum hs_stage s)
{
	return cfg_stages & HS_STAGE_BIT(s);
}

/* ifindex's place in set (hs_in_if, hs_out_if), -1: not in it */
static __always_inline int hs_if_pos(const volatile __u32 *set, __u32 ifindex)
{
#pragma unroll
	for (int i = 0; i < HS_MAX_IFACES; i++) {
		__u32 v = set[i];

		if (!v)
			return -1;
		if (v == ifindex)
			return i;
	}
	return -1;
}

static __always_inline struct hs_record *hs_slot(__u64 seq)
{
	__u32 cpu = hs_seq_cpu(seq);
	__u32 idx = (cpu << cfg_slot_shift) |
		    ((__u32)seq & ((1u << cfg_slot_shift) - 1));

	return bpf_map_lookup_elem(&slots, &idx);
}

/*
 * Slot ownership. A slot belongs to the packet whose seq it holds, and seq is
 * the only ownership word: it is changed by atomic read-modify-writes alone
 * (BPF cmpxchg/xchg with fetch are fully ordered, on x86 and arm64 alike).
 *
 *  - XDP takes a slot: if it holds a live packet it copies that record out,
 *    then claims the slot with cmpxchg(seq: old -> 0); only if that
 *    succeeds is the copy committed to the record ring (EVICTED). Then it
 *    fills the slot and publishes the new seq with xchg, so every field is
 *    written before any later stage can match the new seq.
 *  - A packet's record leaves (t4, drop, LOCAL_IN, ring full) the same way:
 *    copy first, then release with cmpxchg(seq: mine -> 0). For one seq
 *    exactly one cmpxchg can succeed, so a packet is emitted once, as
 *    COMPLETE or DROPPED or EVICTED, never twice; the loser gives up its
 *    copy (counted as a race). The copy is whole: it was read before the
 *    successful cmpxchg, and anyone rewriting the slot must first win a
 *    cmpxchg that comes after it. What a leaving packet adds (t4, out
 *    ifindex, drop reason) goes into its copy, never into the slot.
 *  - A stage stamps a field of a live slot (t[s], the skb seen) after
 *    matching seq, then re-reads seq with a cmpxchg (a full barrier between
 *    its store and that load). If the slot changed hands in between, the
 *    stamp may have landed in the next packet's record: it is taken back
 *    with cmpxchg(field: mine -> 0), which leaves a value anyone else wrote
 *    since alone. At worst the next packet loses a stamp it made in that
 *    window (0, "not seen"); it never carries another packet's instant.
 * A slot released is seq 0 (free).
 */
static __always_inline __u64 hs_seq_now(struct hs_record *rec, __u64 seq)
{
	/* an atomic read of seq, ordered after every earlier store */
	return __sync_val_compare_and_swap(&rec->seq, seq, seq);
}

static __always_inline bool hs_release(struct hs_record *rec, __u64 seq)
{
	return __sync_val_compare_and_swap(&rec->seq, seq, 0) == seq;
}

/*
 * A stage's stamp: t[s] = now and (skb_id not 0: t2) the skb that carries
 * the packet, in the packet's own slot or nowhere. The skb id's take-back is a plain test and
 * store (without alu32 there is no 32-bit cmpxchg): a lost race there costs
 * at most a drop recognised late (hs_drop), never a wrong instant.
 */
static __always_inline void hs_stamp_slot(struct hs_record *rec, __u64 seq, enum hs_stage s,
					  __u64 now, __u32 skb_id)
{
	if (skb_id)
		rec->flow = skb_id;
	rec->t[s] = now;
	if (hs_seq_now(rec, seq) == seq)
		return;
	__sync_val_compare_and_swap(&rec->t[s], now, 0);
	if (skb_id && HS_READ_ONCE(rec->flow) == skb_id)
		rec->flow = 0;
}

/*
 * An skb's address as a number: its distance from a fixed kernel address
 * (hs_tapped's). A pointer cannot be turned into a number directly, but the
 * difference of two pointers is one for a loader allowed to see kernel
 * addresses (CAP_PERFMON, which tracing programs need anyway): one
 * subtraction, where reading the pointer back through the stack with
 * bpf_probe_read_kernel cost a helper call.
 */
static __always_inline __u64 hs_skb_addr(const struct sk_buff *skb)
{
	return (long)skb - (long)&hs_tapped;
}

/*
 * The skb that carries the packet, as the slot's `flow` field holds it from
 * t2 on (the recorder overwrites flow in every record it stores): the low 32
 * bits of its address, never 0.
 */
static __always_inline __u32 hs_skb_id(const struct sk_buff *skb)
{
	__u32 id = hs_skb_addr(skb);

	return id ? id : 1;
}

enum hs_find { HS_FOUND, HS_NOMETA, HS_STALE, HS_UNSAMPLED };

/* seq's slot into *rec: found while it still holds seq, else stale (reused,
 * emitted; no packet has seq 0) */
static __always_inline enum hs_find hs_slot_of(__u64 seq, struct hs_record **rec)
{
	*rec = hs_slot(seq);
	return *rec && seq && HS_READ_ONCE((*rec)->seq) == seq ? HS_FOUND : HS_STALE;
}

/*
 * bpf_core_cast, read-only, with the kfunc under this object's own flavour
 * name (libbpf resolves bpf_rdonly_cast___stage_route as bpf_rdonly_cast):
 * bpftool's linker (libbpf 1.5) refuses one kfunc extern in two objects.
 * The Makefile sets HS_OBJECT to the object's name.
 */
#ifndef HS_OBJECT
#error "HS_OBJECT: the object's name (the Makefile sets it)"
#endif
#define HS_RDONLY_CAST ___apply(bpf_rdonly_cast___, HS_OBJECT)
extern void *HS_RDONLY_CAST(const void *obj, __u32 btf_id) __ksym;
#define hs_cast(ptr, type) \
	((const typeof(type) *)HS_RDONLY_CAST((ptr), bpf_core_type_id_kernel(type)))

/* struct hs_meta as two words: any kernel struct of two u64 lets the
 * verifier read it (bpf_core_cast), the union gives the fields back */
union hs_meta_words {
	struct hs_meta m;
	__u64 w[2];
};

static __always_inline const struct skb_shared_info *hs_shinfo(const struct sk_buff *skb)
{
	return hs_cast(skb->head + skb->end, struct skb_shared_info);
}

/*
 * The metadata XDP left in front of skb's MAC header, into m; false: none
 * (meta_len must be exactly ours). The head is read through bpf_core_cast
 * (bpf_rdonly_cast, inlined to a move): plain loads the JIT guards against
 * faults, where bpf_probe_read_kernel cost two helper calls per stage.
 */
static __always_inline bool hs_meta_read(const struct sk_buff *skb, union hs_meta_words *m)
{
	const struct bpf_timer *words;

	if (hs_shinfo(skb)->meta_len != sizeof(struct hs_meta))
		return false;
	words = hs_cast(skb->head + skb->mac_header - sizeof(*m), struct bpf_timer);
	m->w[0] = words->__opaque[0];
	m->w[1] = words->__opaque[1];
	return true;
}

/*
 * The slot of the packet behind skb, through its metadata. The magic must
 * match, so a packet that never met our XDP program (or whose headers moved)
 * is never mistaken for one that did; a slot reused since, or already
 * emitted, is stale.
 */
static __always_inline enum hs_find hs_find_meta(const struct sk_buff *skb,
						 struct hs_record **rec, __u64 *seq)
{
	union hs_meta_words m;

	if (!hs_meta_read(skb, &m))
		return HS_NOMETA;
	if (m.m.magic != HS_META_MAGIC)
		return m.m.magic == HS_META_UNSAMPLED ? HS_UNSAMPLED : HS_NOMETA;
	if (hs_slot_of(m.m.seq, rec) != HS_FOUND)
		return HS_STALE;
	*seq = m.m.seq;
	return HS_FOUND;
}

/*
 * With --sample on, a packet t1 left out, told before a stage reads the
 * clock: such a packet then costs the stage a few loads (hs_find says the
 * same of it later, for a stage that does not ask first).
 */
static __always_inline bool hs_left_out(const struct sk_buff *skb)
{
	union hs_meta_words m;

	return HS_READ_ONCE(hs_sample_n) > 1 && hs_meta_read(skb, &m) &&
	       m.m.magic == HS_META_UNSAMPLED;
}

/*
 * Another skb shares this skb's head, so its metadata too: a clone (a packet
 * socket's, tcpdump's) or the original of one. SKB_DATAREF_MASK: the low 16
 * bits of dataref count the skbs using the head.
 */
static __always_inline bool hs_head_shared(const struct sk_buff *skb)
{
	struct skb_shared_info *shinfo = (void *)(skb->head + skb->end);
	int ref = 0;

	if (!BPF_CORE_READ_BITFIELD(skb, cloned))
		return false;
	if (bpf_probe_read_kernel(&ref, sizeof(ref), &shinfo->dataref))
		return false;
	return (ref & 0xffff) > 1;
}

/* --gro keep: the skb is a later part of a batch GRO split (gro.bpf.h),
 * whose metadata names the batch's slot: its own is by_skb's */
static __always_inline bool hs_gro_part(const struct sk_buff *skb, enum hs_find r,
					const struct hs_record *rec)
{
	if (!cfg_gro)
		return false;
	return r == HS_STALE || (r == HS_FOUND && rec->t[HS_T2] && rec->flow != hs_skb_id(skb));
}

/* The packet's slot: through its metadata, or, where a copied head lost it,
 * the MAC header moved (tunnel.bpf.h) or it is part of a split batch, by_skb. */
static __always_inline enum hs_find hs_find(const struct sk_buff *skb,
					    struct hs_record **rec, __u64 *seq)
{
	enum hs_find r;
	__u64 addr, *sq;

	*rec = NULL;
	r = hs_find_meta(skb, rec, seq);
	if (hs_gro_part(skb, r, *rec)) {
		if (!hs_tapped)
			return r == HS_STALE ? r : HS_NOMETA;
	} else if ((r != HS_NOMETA && r != HS_STALE) || !hs_tapped) {
		/* stale too: where encapsulation moved the MAC header, the
		 * bytes in front of it may be an older packet's metadata */
		return r;
	}
	addr = hs_skb_addr(skb);
	sq = bpf_map_lookup_elem(&by_skb, &addr);
	if (!sq)
		return r == HS_STALE ? r : HS_NOMETA;
	if (*sq == HS_SEQ_UNSAMPLED)
		return HS_UNSAMPLED;
	*seq = *sq;
	return hs_slot_of(*seq, rec);
}

/* skb into by_skb under seq (or HS_SEQ_UNSAMPLED for a packet --sample left
 * out). A tap holds a copy of the packet's head: forwarding will copy the
 * head, and lose the metadata with it, so PRE_ROUTING files a shared one. */
static __always_inline void hs_file(const struct sk_buff *skb, __u64 seq)
{
	__u64 addr = hs_skb_addr(skb);

	if (!bpf_map_update_elem(&by_skb, &addr, &seq, BPF_ANY) && !hs_tapped)
		hs_tapped = 1;
}

/*
 * An skb whose packet leaves (handed over whole, cut into segments,
 * dropped, retired) lets its by_skb entry go, if it had one: its address is
 * soon another skb's, which must not find the entry (a split batch's parts
 * are filed there, hs_gro_later; a packet followed through a tunnel).
 */
static __always_inline void hs_by_skb_forget(const struct sk_buff *skb)
{
	__u64 addr;

	if (!hs_tapped)
		return;
	addr = hs_skb_addr(skb);
	bpf_map_delete_elem(&by_skb, &addr);
}

static __always_inline void hs_tap_note(const struct sk_buff *skb, __u64 seq)
{
	if (hs_head_shared(skb))
		hs_file(skb, seq);
}

/*
 * The first half of handing a record over: a copy of the slot in this CPU's
 * ring (NULL: the ring is full), for the caller to add what the leaving
 * stage knows, then hs_emit_commit. now: the leaving stage's instant, when
 * it has one (0: read here if a flight entry needs it).
 */
static __always_inline struct hs_record *hs_emit_begin(struct hs_record *rec, __u8 status,
							__u64 now)
{
	struct hs_record *out;
	__u32 mark = 0;

	if (cfg_hist == HS_HIST_AGGREGATE) {
		/* no ring: the flight recorder's entry, when it is on */
		__u32 zero = 0, i;
		struct hs_flight_cpu *c = cfg_flight_n ? bpf_map_lookup_elem(&flight_cpu, &zero) : NULL;
		struct hs_flight_entry *e;

		if (!c)
			return NULL;
		if (hs_flight_frozen) {
			__sync_fetch_and_add(&c->not_kept, 1);
			return NULL;
		}
		/* atomic: a program nested on this CPU (a drop inside a
		 * transmit) takes the next entry, never the same one */
		i = __sync_fetch_and_add(&c->pos, 1) % cfg_flight_n;
		e = bpf_map_lookup_elem(&flight, &i);
		if (!e)
			return NULL;
		e->at = now ?: bpf_ktime_get_ns();
		out = &e->r;
	} else {
		__u32 cpu = bpf_get_smp_processor_id(), n = 1u << cfg_ring_shift, i;
		struct hs_ring_pos *p = bpf_map_lookup_elem(&ring_pos, &cpu);
		__u64 place;

		if (!p || HS_BENCH_NO_HANDOVER)
			return NULL;
		if (HS_READ_ONCE(p->claim) - p->read_seen >= n - HS_RING_SLACK) {
			p->read_seen = HS_READ_ONCE(p->read);
			if (HS_READ_ONCE(p->claim) - p->read_seen >= n - HS_RING_SLACK)
				return NULL;
		}
		place = __sync_fetch_and_add(&p->claim, 1);
		i = cpu << cfg_ring_shift | ((__u32)place & (n - 1));
		/* never NULL (cpu < possible CPUs): a place claimed and never
		 * committed would stop the recorder's reading of this ring */
		out = bpf_map_lookup_elem(&ring, &i);
		if (!out)
			return NULL;
		/* anything but the commit mark until hs_emit_commit */
		mark = ~hs_ring_token(place);
	}
	__builtin_memcpy(out, rec, sizeof(*out));
	out->status = status;
	out->flow = mark;
	out->path = HS_PATH_STACK;	/* t4 names the path of what leaves */
	/* the pieces' count of those handed over (pieces.bpf.h) is the slot's
	 * alone; a packet lost after its first piece left did not leave */
	out->reserved = 0;
	/* --gro keep's slot counts segs from 1, closed at t2, and keeps a
	 * gro_t1 place in drop_reason (gro.bpf.h); the record's segs is 0 for
	 * one packet */
	out->segs &= ~HS_GRO_CLOSED;
	if (out->segs == 1)
		out->segs = 0;
	out->drop_reason = 0;
	if (status == HS_ST_DROPPED || status == HS_ST_EVICTED) {
		out->t[HS_T4] = 0;
		out->out_ifindex = 0;
	}
	return out;
}

/* the ring's commit mark, last: the record's stores come before it, since
 * the caller's fetching atomic (fully ordered) sits between them */
static __always_inline void hs_ring_commit(struct hs_record *out)
{
	out->flow = ~out->flow;
}

/*
 * The second half: release the slot if it is still seq's; commit the copy if
 * it was, give it up (seq 0, passed over) if someone else released the slot
 * first (false: the packet left by the other way, which counted it).
 */
static __always_inline bool hs_emit_commit(struct hs_record *rec, __u64 seq,
					   struct hs_record *out, __u8 status)
{
	if (!hs_release(rec, seq)) {
		/* a flight entry given up is an empty one (seq 0) */
		if (out)
			__sync_lock_test_and_set(&out->seq, 0);
		if (out && cfg_hist != HS_HIST_AGGREGATE)
			hs_ring_commit(out);
		return false;
	}
	if (!out) {
		if (cfg_hist == HS_HIST_AGGREGATE || HS_BENCH_NO_HANDOVER)
			return true;
		hs_count(HS_C_RB_FAIL);
		if (status == HS_ST_COMPLETE)
			hs_count(HS_C_RB_FAIL_COMPLETE);
		return true;
	}
	/* out->seq is seq: a seq is never reused, so a slot that held another
	 * when it was copied could not be released as seq's */
	if (cfg_hist != HS_HIST_AGGREGATE)
		hs_ring_commit(out);
	return true;
}

/*
 * A new packet takes the next slot of this CPU at now (t1; t2 for a part of
 * a split GRO batch): a packet still in it is evicted, unless its own last
 * stage releases it first. Returns the slot zeroed, its seq in *seq, which
 * the caller publishes (hs_slot_publish) once it has filled it; NULL: none.
 */
static __always_inline struct hs_record *hs_slot_take(__u64 now, __u64 *seq)
{
	struct hs_record *rec, *out;
	__u32 zero = 0, cpu = bpf_get_smp_processor_id();
	__u64 *n = bpf_map_lookup_elem(&seqno, &zero), old;

	if (!n)
		return NULL;
	*seq = hs_seq(cpu, ++*n);
	rec = hs_slot(*seq);
	if (!rec)
		return NULL;
	old = HS_READ_ONCE(rec->seq);
	out = old ? hs_emit_begin(rec, HS_ST_EVICTED, now) : NULL;
	if (old && hs_emit_commit(rec, old, out, HS_ST_EVICTED))
		hs_count(HS_C_EVICTED);
	else if (!old)
		/* free: still a full barrier, so the last owner's copy (made
		 * before its release) is done before the stores below */
		__sync_val_compare_and_swap(&rec->seq, 0, 0);
	__builtin_memset(rec, 0, sizeof(*rec));
	return rec;
}

/* published last, fully ordered: a stage that matches seq sees the rest */
static __always_inline void hs_slot_publish(struct hs_record *rec, __u64 seq)
{
	__sync_lock_test_and_set(&rec->seq, seq);
}

/* a trigger: counted; the first since the recorder re-armed is written for it */
static __always_inline void hs_flight_fire(__u64 what, __u64 value, __u64 seq)
{
	__u32 zero = 0;
	struct hs_flight_cpu *c = bpf_map_lookup_elem(&flight_cpu, &zero);

	if (c)
		__sync_fetch_and_add(&c->triggers, 1);
	if (hs_flight_claim || __sync_val_compare_and_swap(&hs_flight_claim, 0, 1))
		return;
	hs_flight_trig.what = what;
	hs_flight_trig.value = value;
	hs_flight_trig.seq = seq;
	/* last, fully ordered: the recorder reads the rest once it sees ns */
	__sync_lock_test_and_set(&hs_flight_trig.ns, bpf_ktime_get_ns());
}

/* a complete packet's stamps t (t4 included) against the delay triggers;
 * the first delay over its threshold fires, in HS_DELAY_LIST's order */
static __always_inline void hs_flight_delays(const __u64 *t, __u64 seq)
{
	static const __u8 later[HS_NDELAYS] = HS_DELAY_LATER, earlier[HS_NDELAYS] = HS_DELAY_EARLIER;

#pragma unroll
	for (int d = 0; d < HS_NDELAYS; d++) {
		__u64 a = t[later[d]], b = t[earlier[d]];

		if (cfg_flight_over[d] && a && b && a > b && a - b >= cfg_flight_over[d]) {
			hs_flight_fire(d, a - b, seq);
			return;
		}
	}
}

/* a dropped packet against the drop triggers */
static __always_inline void hs_flight_drop(__u32 reason, __u64 seq)
{
#pragma unroll
	for (int i = 0; i < HS_FLIGHT_REASONS; i++) {
		if (!cfg_flight_reasons[i])
			return;
		if (cfg_flight_reasons[i] == reason || cfg_flight_reasons[i] == HS_FLIGHT_ANY_DROP) {
			hs_flight_fire(HS_FLIGHT_WHAT_DROP, reason, seq);
			return;
		}
	}
}

/* later - earlier into h, when both stages stamped the packet */
static __always_inline void hs_hist_add(struct hs_hist *h, __u64 later, __u64 earlier)
{
	__u64 d = later - earlier;
	__u32 i;

	if (!later || !earlier)
		return;
	if ((__s64)d < 0) {
		h->negative++;
		return;
	}
	h->sum_ns += d;
	if (!d) {
		h->zero++;
		return;
	}
	i = hs_hist_bucket(d);
	if (i < HS_HIST_BUCKETS)
		h->bucket[i]++;
	else
		h->overflow++;
}

/* the series of (output, tos, path), its index taken on its first packet;
 * NULL: every index is taken (counted) */
static __always_inline struct hs_hist_set *hs_hist_series(__u32 out_pos, __u8 tos, __u8 path)
{
	__u64 key = hs_hist_key(out_pos, tos, path), at = (key * 0x9e3779b97f4a7c15ull) >> 60;
	__u32 zero = 0, *idx, n;
	struct hs_hist_cache *c = bpf_map_lookup_elem(&hist_cache, &zero);

	if (c && c->key[at] == key)
		return bpf_map_lookup_elem(&hist, &c->idx[at]);
	idx = bpf_map_lookup_elem(&hist_keys, &key);
	if (!idx && HS_READ_ONCE(hs_hist_next) < HS_HIST_KEYS) {
		/* 64-bit: a fetching 32-bit add needs alu32 */
		n = __sync_fetch_and_add(&hs_hist_next, 1);
		/* a CPU that lost the race to insert this key uses the winner's
		 * index (its own stays unused: no key maps to it) */
		if (n < HS_HIST_KEYS && !bpf_map_update_elem(&hist_keys, &key, &n, BPF_NOEXIST))
			idx = &n;
		else
			idx = bpf_map_lookup_elem(&hist_keys, &key);
	}
	if (!idx) {
		__sync_fetch_and_add(&hs_hist_nokey, 1);
		return NULL;
	}
	if (c) {
		c->key[at] = key;
		c->idx[at] = *idx;
	}
	return bpf_map_lookup_elem(&hist, idx);
}

/* A complete packet's delays into its series: t its stamps, t4 included;
 * out_pos its output's place among the --out interfaces */
static __always_inline void hs_hist_packet(const __u64 *t, __u32 out_pos, __u8 tos,
					   __u8 path)
{
	static const __u8 later[HS_NDELAYS] = HS_DELAY_LATER, earlier[HS_NDELAYS] = HS_DELAY_EARLIER;
	struct hs_hist_set *set = hs_hist_series(out_pos, tos, path);

	if (!set)
		return;
	/* a delay of an optional stage only with that stage on (rodata: pruned) */
#pragma unroll
	for (int d = 0; d < HS_NDELAYS; d++)
		if (hs_stage_on(later[d]) && hs_stage_on(earlier[d]))
			hs_hist_add(&set->d[d], t[later[d]], t[earlier[d]]);
}

/* a dropped packet into the drops map (rare: a hash lookup is cheap enough) */
static __always_inline void hs_drop_add(__u32 stage, __u32 reason)
{
	__u64 key = (__u64)stage << 32 | reason, one = 1, *n = bpf_map_lookup_elem(&drops, &key);

	if (n) {
		(*n)++;
		return;
	}
	/* per-CPU: another CPU's insert of this key makes ours EEXIST */
	if (!bpf_map_update_elem(&drops, &key, &one, BPF_NOEXIST))
		return;
	n = bpf_map_lookup_elem(&drops, &key);
	if (n)
		(*n)++;
	else
		__sync_fetch_and_add(&hs_drops_nokey, 1);
}

/* An optional stage: stamp the packet's slot if it has one. */
static __always_inline void hs_stamp(const struct sk_buff *skb, enum hs_stage s, __u64 now)
{
	struct hs_record *rec;
	__u64 seq;

	if (hs_find(skb, &rec, &seq) != HS_FOUND)
		return;
	hs_stamp_slot(rec, seq, s, now, 0);
	hs_count(HS_C_OPT_PKTS);
	if (hs_cost_sampled(seq))
		hs_cost_note(seq, s, now);
}

#endif
