/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One recording: what the user selected, the slot table that joins a packet's
 * stages, the queue of finished records, the counters. Shared by every file
 * of the module.
 */
#ifndef HS_SESSION_H
#define HS_SESSION_H

#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/netfilter.h>
#include <linux/percpu.h>
#include <linux/prandom.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/version.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include "hopscope_kmod.h"
#include "defaults.h"

/* a seq given at t0, until t1 gives the packet its own: never one of t1's */
#define HS_SEQ_PROVISIONAL (1ull << 47)

/* slots per bucket: a full bucket evicts its oldest packet */
#define HS_WAYS 8

/* one packet between its input stage and its record */
struct hs_slot {
	const struct sk_buff *skb;	/* the key; NULL: free */
	const void *head;		/* skb->head at input: tells a reused address before PRE_ROUTING */
	u64 born;			/* first stamp: the oldest is evicted first */
	struct hs_record r;
};

struct hs_bucket {
	spinlock_t lock;
	struct hs_slot slot[HS_WAYS];
};

/* finished records waiting for read(); fixed size, full means lost and counted */
struct hs_ring {
	spinlock_t lock;
	u32 head;	/* next write */
	u32 tail;	/* next read */
	u32 mask;
	struct hs_record *rec;
};

/*
 * Merged packets cut into segments at the output, whose segments the driver
 * gets next (gso.c): in consume order, one queue for the session (a qdisc
 * may requeue the rest of a packet's segments and send them from another
 * CPU). Full: the oldest is let go.
 */
#define HS_GSO_WAIT 32
struct hs_gso_wait {
	const struct sk_buff *skb;	/* fragments: the packet's skb, its slot's key */
	int ifindex;			/* output device */
	u32 n;				/* its pieces */
	u32 left;			/* pieces still to come; 0: let go */
	u32 seq_lo, seq_len;		/* TCP: its payload's sequence numbers (0 long: not TCP) */
	bool frag;			/* IP fragments: told by their IP id and addresses */
	bool held;			/* r is the packet's record, its slot freed: to emit */
	__be16 ip_id;
	__be32 saddr, daddr;		/* as the fragments carry them (after NAT) */
	/* merged: the packet's record, taken from its slot at the consume
	 * (the freed skb's address may soon be another packet's); fragments:
	 * a copy of the slot's at t3 */
	struct hs_record r;
};

struct hs_gso_queue {
	spinlock_t lock;		/* taken before a bucket's, never after */
	u32 head, n;
	struct hs_gso_wait w[HS_GSO_WAIT];
};

struct hs_pcpu {
	u64 arrivals;			/* seq's per-CPU count (hs_seq) */
	u64 t0_arrivals;		/* t0's provisional seqs (hooks_input.c) */
	u64 c[HS_C_NCOUNTERS];
	struct rnd_state rnd;		/* t0 samples its cost at random: t1 replaces its seq */
	struct hs_cost cost[HS_NSTAGES];
};

enum hs_state { HS_IDLE, HS_CONFIGURED, HS_RUNNING, HS_STOPPED };

struct hs_session {
	struct mutex lock;		/* state changes and read() */
	enum hs_state state;
	struct net *net;		/* not counted: the pernet exit clears it */
	u64 net_inum;
	u32 stages;
	u32 flags;
	u32 n_in, n_out;
	int in_ifindex[HS_MAX_IFACES];
	int out_ifindex[HS_MAX_IFACES];
	struct hs_bucket *buckets;
	u32 nbuckets;			/* power of two */
	u32 bucket_bits;
	struct hs_ring ring;
	struct hs_pcpu __percpu *pcpu;
	struct hs_gso_queue gso;
	wait_queue_head_t wq;
	struct delayed_work wake;	/* batches reader wakeups */
	struct net *nf_net;		/* where the netfilter hooks are registered, or NULL */
	struct nf_hook_ops nf_ops[8];
	u32 n_nf_ops;
	u32 tp_on;			/* bit per enum hs_tp_id */
	u32 drain_pos;			/* after stop: next slot handed over as in flight */
	/*
	 * read(): records move from the ring (or, after stop, the slots) into
	 * bounce under s->lock, and to the user under read_lock only. s->lock
	 * is taken by every netns teardown on the machine (hs_session_net_exit),
	 * so it is never held across copy_to_user: a reader stalled on its
	 * buffer (a page fault, userfaultfd, FUSE) must not stall them. Records
	 * a failed copy did not deliver stay in bounce for the next read.
	 */
	struct mutex read_lock;		/* one reader at a time; owns bounce */
	struct hs_record *bounce;	/* read() batch */
	u32 bounce_off, bounce_n;	/* bounce[bounce_off..+bounce_n): not yet delivered */
};

#define HS_BOUNCE_RECORDS 64

#define hs_count(s, idx) this_cpu_inc((s)->pcpu->c[idx])

/* HS_KMOD_F_FLOOR: every probe's first line, as the eBPF programs' */
#define HS_FLOOR_EXIT(s, ...) \
	do { if (unlikely((s)->flags & HS_KMOD_F_FLOOR)) return __VA_ARGS__; } while (0)

/* the packets whose probe cost is sampled, by their seq (include/hopscope.h) */
static inline bool hs_cost_sampled(u64 seq)
{
	return !(seq & (BIT_ULL(HS_COST_SAMPLE_SHIFT) - 1));
}

static inline bool hs_ifindex_in(const int *set, u32 n, int ifindex)
{
	u32 i;

	for (i = 0; i < n; i++)
		if (set[i] == ifindex)
			return true;
	return false;
}

/* a device in the recorded netns and among the selected inputs / outputs */
static inline bool hs_dev_in(const struct hs_session *s, const struct net_device *dev)
{
	return dev && dev_net(dev) == READ_ONCE(s->net) &&
	       hs_ifindex_in(s->in_ifindex, s->n_in, dev->ifindex);
}

static inline bool hs_dev_out(const struct hs_session *s, const struct net_device *dev)
{
	return dev && dev_net(dev) == READ_ONCE(s->net) &&
	       hs_ifindex_in(s->out_ifindex, s->n_out, dev->ifindex);
}

static inline bool hs_stage_on(const struct hs_session *s, enum hs_stage st)
{
	return s->stages & HS_STAGE_BIT(st);
}

/* ring.c */
int hs_ring_init(struct hs_ring *r, u32 records);
void hs_ring_free(struct hs_ring *r);
bool hs_ring_push(struct hs_ring *r, const struct hs_record *rec);
u32 hs_ring_pop(struct hs_ring *r, struct hs_record *out, u32 max);
u32 hs_ring_len(struct hs_ring *r);

/* slots.c: a found or new slot comes back with its bucket locked */
int hs_slots_init(struct hs_session *s, u32 slots_per_cpu);
void hs_slots_free(struct hs_session *s);
struct hs_slot *hs_slot_find(struct hs_session *s, const struct sk_buff *skb,
			     struct hs_bucket **b, unsigned long *flags);
struct hs_slot *hs_slot_find_fwd(struct hs_session *s, const struct sk_buff *skb,
				 struct hs_bucket **b, unsigned long *flags);
struct hs_slot *hs_slot_new(struct hs_session *s, const struct sk_buff *skb, u64 now,
			    struct hs_bucket **b, unsigned long *flags);
u64 hs_slot_stamp(struct hs_session *s, const struct sk_buff *skb, enum hs_stage st, u64 now);
void hs_record_emit(struct hs_session *s, struct hs_record *r, u8 status);
void hs_record_out(struct hs_session *s, struct hs_record *r, const struct net_device *dev,
		   u64 now, bool traced);
void hs_slot_emit(struct hs_session *s, struct hs_slot *slot, u8 status);
void hs_slot_free(struct hs_slot *slot);
u32 hs_slots_drain(struct hs_session *s, struct hs_record *out, u32 max);

static inline void hs_slot_unlock(struct hs_bucket *b, unsigned long flags)
{
	spin_unlock_irqrestore(&b->lock, flags);
}

/* parse.c: header fields and key of the packet at skb->data (its network header) */
int hs_parse_skb(const struct sk_buff *skb, struct hs_record *r);
void hs_count_parse(struct hs_session *s, int err, u8 flags);

/* counters.c */
void hs_counters_sum(struct hs_session *s, struct hs_kmod_counters *out);
void hs_count_emitted(struct hs_session *s, u8 status, bool queued);
void hs_cost_add(struct hs_session *s, enum hs_stage st, u64 entry);
void hs_cost_sum(struct hs_session *s, struct hs_kmod_cost *out);

/* tracepoints.c */
enum hs_tp_id {
	HS_TP_NETIF_RX, HS_TP_RECEIVE, HS_TP_QUEUE, HS_TP_XMIT, HS_TP_KFREE, HS_TP_CONSUME, HS_TP_N
};
int hs_tp_lookup(void);
bool hs_tp_found(enum hs_tp_id id);
u32 hs_tp_stages(void);
int hs_tp_attach(struct hs_session *s);
void hs_tp_detach(struct hs_session *s);

/* hooks_input.c, hooks_output.c, hooks_drop.c: the probes */
void hs_probe_netif_rx(void *data, struct sk_buff *skb);
void hs_probe_receive(void *data, struct sk_buff *skb);
void hs_probe_queue(void *data, struct sk_buff *skb);
void hs_probe_xmit(void *data, const struct sk_buff *skb, const struct net_device *dev);
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
void hs_probe_kfree(void *data, struct sk_buff *skb, void *location,
		    enum skb_drop_reason reason, struct sock *rx_sk);
#else
void hs_probe_kfree(void *data, struct sk_buff *skb, void *location,
		    enum skb_drop_reason reason);
#endif

/* gso.c: merged packets (GRO) the output cuts into segments */
u32 hs_gso_segs(const struct sk_buff *skb);
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
void hs_probe_consume(void *data, struct sk_buff *skb, void *location);
#else
void hs_probe_consume(void *data, struct sk_buff *skb);
#endif
bool hs_gso_xmit(struct hs_session *s, const struct sk_buff *skb,
		 const struct net_device *dev, bool traced, u64 now, u64 *seq);
void hs_frag_expect(struct hs_session *s, struct sk_buff *skb);
u32 hs_gso_drain(struct hs_session *s, struct hs_record *out, u32 max);

/* hooks_nf.c */
int hs_nf_attach(struct hs_session *s);
void hs_nf_detach(struct hs_session *s);

/* session.c */
struct hs_session *hs_session_new(void);
void hs_session_free(struct hs_session *s);
int hs_session_configure(struct hs_session *s, const struct hs_kmod_config *cfg);
int hs_session_start(struct hs_session *s);
void hs_session_stop(struct hs_session *s);
void hs_session_info(struct hs_session *s, struct hs_kmod_info *info);
void hs_session_net_exit(struct hs_session *s, struct net *net);

/* main.c: the open session, for the pernet exit */
extern struct mutex hs_global_lock;
extern struct hs_session *hs_current;

/* chardev.c */
int hs_chardev_init(void);
void hs_chardev_exit(void);

#endif /* HS_SESSION_H */
