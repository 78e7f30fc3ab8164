/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The router's interface stack (ifstack.h). rtnetlink, not /sys: a socket
 * belongs to the netns it is made in, so it sees the router's devices even
 * where /sys could not be remounted for it. */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <errno.h>
#include <linux/if_link.h>
#include <linux/if_tunnel.h>
#include <netinet/in.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "ifaces.h"
#include "ifstack.h"

#define MAX_DEPTH 8	/* stacked devices followed up or down */

static const char *const ifp_names[] = {
	"flowtable", "tc_foreign", "bridge_nf_call_iptables", "bridge_nf_call_ip6tables", "ifb",
};
_Static_assert(sizeof(ifp_names) / sizeof(ifp_names[0]) == __builtin_ctz(HS_IFP_IFB) + 1,
	       "a name per HS_IFP_* bit");

static bool in_list(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(s, *list))
			return true;
	return false;
}

/* masters whose port hands each packet up in a new receive (its XDP again)
 * and down through the master's own start_xmit; not a VRF, which only
 * changes the routing table */
static bool l2_master(const char *kind)
{
	return in_list(kind, (const char *const[]){ "bridge", "bond", "team", NULL });
}

/* uppers on a parent (IFLA_LINK) that, likewise, receive again and transmit
 * through their parent */
static bool l2_on_link(const char *kind)
{
	return in_list(kind, (const char *const[]){ "vlan", "macvlan", "macvtap", "ipvlan",
						    "ipvtap", NULL });
}

static bool tunnel(const char *kind)
{
	return in_list(kind, (const char *const[]){ "vxlan", "geneve", "gre", "gretap", "erspan",
						    "ipip", "sit", "ip6gre", "ip6gretap",
						    "ip6erspan", "ip6tnl", "vti", "vti6",
						    "wireguard", "bareudp", NULL });
}

/* ---- rtnetlink ---------------------------------------------------------------- */

/* send req, hand each answer to cb until the dump's end, the one answer or an
 * error; -errno */
static int nl_talk(int fd, void *req, int (*cb)(struct nlmsghdr *h, void *ctx), void *ctx)
{
	static char buf[1 << 16];

	if (send(fd, req, ((struct nlmsghdr *)req)->nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -EIO;
		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			int r;

			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR)
				return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
			r = cb(h, ctx);
			if (r || !(h->nlmsg_flags & NLM_F_MULTI))
				return r;
		}
	}
}

static void parse_attrs(struct rtattr **tb, int max, struct rtattr *rta, int len)
{
	memset(tb, 0, sizeof(*tb) * (max + 1));
	for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len))
		if (rta->rta_type <= max)
			tb[rta->rta_type] = rta;
}

static uint32_t u32_of(const struct rtattr *a)
{
	return a && RTA_PAYLOAD(a) >= 4 ? *(uint32_t *)RTA_DATA(a) : 0;
}

static void set_remote(struct hs_link *l, const struct rtattr *a)
{
	static const unsigned char zero[16];
	int len = a ? (int)RTA_PAYLOAD(a) : 0;

	if ((len != 4 && len != 16) || !memcmp(RTA_DATA(a), zero, len))
		return;
	l->remote_af = len == 4 ? AF_INET : AF_INET6;
	memcpy(l->remote, RTA_DATA(a), len);
}

static uint16_t port_of(const struct rtattr *a)
{
	return a && RTA_PAYLOAD(a) >= 2 ? ntohs(*(uint16_t *)RTA_DATA(a)) : 0;
}

/* an IP-in-IP tunnel's outer protocols: its IFLA_IPTUN_PROTO, or (0, any)
 * those its kind carries */
static void iptun_eps(struct hs_link *l, const struct rtattr *proto)
{
	int p = proto && RTA_PAYLOAD(proto) >= 1 ? *(uint8_t *)RTA_DATA(proto) : 0;

	if (p) {
		l->ep[0] = (uint32_t)p << 16;
		return;
	}
	l->ep[0] = strcmp(l->kind, "sit") ? (uint32_t)IPPROTO_IPIP << 16 : (uint32_t)IPPROTO_IPV6 << 16;
	if (!strcmp(l->kind, "ip6tnl"))
		l->ep[1] = (uint32_t)IPPROTO_IPV6 << 16;
}

/* the kind's own data: a bridge's netfilter options, a tunnel's link,
 * remote and outer packets (WireGuard's port is not here: wg_port) */
static void link_data(struct hs_link *l, struct rtattr *data)
{
	struct rtattr *tb[64];

	if (!data)
		return;
	parse_attrs(tb, 63, RTA_DATA(data), RTA_PAYLOAD(data));
	if (!strcmp(l->kind, "bridge")) {
		l->nf_call[0] = tb[IFLA_BR_NF_CALL_IPTABLES] &&
				*(uint8_t *)RTA_DATA(tb[IFLA_BR_NF_CALL_IPTABLES]);
		l->nf_call[1] = tb[IFLA_BR_NF_CALL_IP6TABLES] &&
				*(uint8_t *)RTA_DATA(tb[IFLA_BR_NF_CALL_IP6TABLES]);
	} else if (!strcmp(l->kind, "vxlan")) {
		l->link = u32_of(tb[IFLA_VXLAN_LINK]);
		set_remote(l, tb[IFLA_VXLAN_GROUP] ? tb[IFLA_VXLAN_GROUP] : tb[IFLA_VXLAN_GROUP6]);
		l->ep[0] = (uint32_t)IPPROTO_UDP << 16 | port_of(tb[IFLA_VXLAN_PORT]);
	} else if (!strcmp(l->kind, "geneve")) {
		set_remote(l, tb[IFLA_GENEVE_REMOTE] ? tb[IFLA_GENEVE_REMOTE] :
			   tb[IFLA_GENEVE_REMOTE6]);
		l->ep[0] = (uint32_t)IPPROTO_UDP << 16 | port_of(tb[IFLA_GENEVE_PORT]);
	} else if (!strcmp(l->kind, "bareudp")) {
		l->ep[0] = (uint32_t)IPPROTO_UDP << 16 | port_of(tb[IFLA_BAREUDP_PORT]);
	} else if (strstr(l->kind, "gre") || strstr(l->kind, "erspan")) {
		set_remote(l, tb[IFLA_GRE_REMOTE]);
		l->ep[0] = (uint32_t)IPPROTO_GRE << 16;
	} else if (tunnel(l->kind)) {
		set_remote(l, tb[IFLA_IPTUN_REMOTE]);
		if (strncmp(l->kind, "vti", 3))
			iptun_eps(l, tb[IFLA_IPTUN_PROTO]);
	}
}

static int link_cb(struct nlmsghdr *h, void *ctx)
{
	struct hs_links *ls = ctx;
	struct ifinfomsg *ifi = NLMSG_DATA(h);
	struct rtattr *tb[IFLA_MAX + 1], *info[IFLA_INFO_MAX + 1] = {};
	struct hs_link *l, *more;

	if (h->nlmsg_type != RTM_NEWLINK)
		return 0;
	more = realloc(ls->l, (ls->n + 1) * sizeof(*ls->l));
	if (!more)
		return -ENOMEM;
	ls->l = more;
	l = memset(&ls->l[ls->n++], 0, sizeof(*l));
	parse_attrs(tb, IFLA_MAX, IFLA_RTA(ifi), IFLA_PAYLOAD(h));
	l->ifindex = ifi->ifi_index;
	l->up = ifi->ifi_flags & IFF_UP;
	if (tb[IFLA_IFNAME])
		snprintf(l->name, sizeof(l->name), "%s", (char *)RTA_DATA(tb[IFLA_IFNAME]));
	l->master = u32_of(tb[IFLA_MASTER]);
	if (tb[IFLA_LINKINFO])
		parse_attrs(info, IFLA_INFO_MAX, RTA_DATA(tb[IFLA_LINKINFO]),
			    RTA_PAYLOAD(tb[IFLA_LINKINFO]));
	if (info[IFLA_INFO_KIND])
		snprintf(l->kind, sizeof(l->kind), "%s", (char *)RTA_DATA(info[IFLA_INFO_KIND]));
	/* IFLA_LINK is a veth's peer, which is no stacking; with a netnsid
	 * it is in another netns */
	l->link_netns = tb[IFLA_LINK_NETNSID];
	if ((l2_on_link(l->kind) || tunnel(l->kind)) && !l->link_netns)
		l->link = u32_of(tb[IFLA_LINK]);
	link_data(l, info[IFLA_INFO_DATA]);
	return 0;
}

static int oif_cb(struct nlmsghdr *h, void *ctx)
{
	struct rtmsg *rt = NLMSG_DATA(h);
	struct rtattr *tb[RTA_MAX + 1];

	if (h->nlmsg_type != RTM_NEWROUTE)
		return 0;
	parse_attrs(tb, RTA_MAX, RTM_RTA(rt), RTM_PAYLOAD(h));
	*(int *)ctx = u32_of(tb[RTA_OIF]);
	return 0;
}

/* the device the route to a tunnel's remote leaves by; 0: none */
static int route_oif(int fd, const struct hs_link *l)
{
	struct {
		struct nlmsghdr h;
		struct rtmsg rt;
		char attrs[64];
	} req = {
		.h = { .nlmsg_type = RTM_GETROUTE, .nlmsg_flags = NLM_F_REQUEST },
		.rt = { .rtm_family = l->remote_af },
	};
	int len = l->remote_af == AF_INET ? 4 : 16, oif = 0;
	struct rtattr *a = (void *)req.attrs;

	a->rta_type = RTA_DST;
	a->rta_len = RTA_LENGTH(len);
	memcpy(RTA_DATA(a), l->remote, len);
	req.rt.rtm_dst_len = len * 8;
	req.h.nlmsg_len = NLMSG_LENGTH(sizeof(req.rt)) + RTA_ALIGN(a->rta_len);
	return nl_talk(fd, &req, oif_cb, &oif) ? 0 : oif;
}

int hs_links_read(struct hs_links *ls)
{
	struct {
		struct nlmsghdr h;
		struct ifinfomsg ifi;
	} req = {
		.h = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETLINK,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.ifi = { .ifi_family = AF_UNSPEC },
	};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), err;

	ls->l = NULL;
	ls->n = 0;
	if (fd < 0)
		return -errno;
	err = nl_talk(fd, &req, link_cb, ls);
	for (int i = 0; !err && i < ls->n; i++)
		if (tunnel(ls->l[i].kind) && !ls->l[i].link && ls->l[i].remote_af)
			ls->l[i].link = route_oif(fd, &ls->l[i]);
	close(fd);
	if (err)
		hs_links_free(ls);
	return err;
}

void hs_links_free(struct hs_links *ls)
{
	free(ls->l);
	ls->l = NULL;
	ls->n = 0;
}

static const struct hs_link *by_index(const struct hs_links *ls, int ifindex)
{
	for (int i = 0; ifindex && i < ls->n; i++)
		if (ls->l[i].ifindex == ifindex)
			return &ls->l[i];
	return NULL;
}

/* ---- the stack ---------------------------------------------------------------- */

/* u is stacked right on x at layer 2: a packet in on x is received again on u,
 * a packet out by u is transmitted again on x */
static bool l2_upper(const struct hs_link *x, const struct hs_link *u)
{
	return (x->master == u->ifindex && l2_master(u->kind)) ||
	       (u->link == x->ifindex && l2_on_link(u->kind));
}

static const char *article(const char *word)
{
	return strchr("aeiouAEIOU", word[0]) ? "an" : "a";
}

static const char *kind_word(const char *kind)
{
	return !strcmp(kind, "vlan") ? "VLAN" : kind;
}

/* buf (x's name and what is said so far) + how x is stacked under 'to',
 * through L2 uppers at any depth: "r-in is a port of bond bond0, which is a
 * port of bridge br0"; false, buf as it was: 'to' is not above x */
static bool chain(const struct hs_links *ls, const struct hs_link *x, int to, char *buf,
		  size_t len, int depth)
{
	if (depth == MAX_DEPTH)
		return false;
	for (int i = 0; i < ls->n; i++) {
		const struct hs_link *u = &ls->l[i];
		size_t used = strlen(buf);

		if (!l2_upper(x, u))
			continue;
		if (x->master == u->ifindex)
			snprintf(buf + used, len - used, "%s a port of %s %s",
				 depth ? ", which is" : " is", kind_word(u->kind), u->name);
		else
			snprintf(buf + used, len - used, "%s the parent of %s %s",
				 depth ? ", which is" : " is", kind_word(u->kind), u->name);
		if (u->ifindex == to || chain(ls, u, to, buf, len, depth + 1))
			return true;
		buf[used] = 0;
	}
	return false;
}

/* how a is stacked under b, into buf; false: it is not */
static bool below(const struct hs_links *ls, const struct hs_iface *a, const struct hs_iface *b,
		  char *buf, size_t len)
{
	const struct hs_link *x = by_index(ls, a->ifindex);

	snprintf(buf, len, "%s", a->name);
	return x && chain(ls, x, b->ifindex, buf, len, 0);
}

/* one side (--in, --out) naming a device and one stacked on it: refused */
static int check_pairs(const struct hs_config *cfg, const struct hs_links *ls, bool out)
{
	char how[512];

	for (int i = 0; i < cfg->n_ifaces; i++)
		for (int k = 0; k < cfg->n_ifaces; k++) {
			const struct hs_iface *a = &cfg->ifaces[i], *b = &cfg->ifaces[k];

			if (i == k || (out ? !a->is_out || !b->is_out : !a->is_in || !b->is_in) ||
			    !below(ls, a, b, how, sizeof(how)))
				continue;
			if (out)
				fprintf(stderr, "hopscope: --out names %s and %s, and %s: each packet "
					"routed to %s would be stamped twice (at %s's hand-over and "
					"again at %s's); name one (%s: t4 after %s's qdisc; %s: t4 "
					"at the hand-over to %s, before it)\n", a->name, b->name, how,
					b->name, b->name, a->name, a->name, a->name, b->name, b->name);
			else
				fprintf(stderr, "hopscope: --in names %s and %s, and %s: each packet "
					"would be stamped twice (at %s's XDP and again at %s's); "
					"name one (%s: t1 before %s; %s: t1 after it)\n", a->name,
					b->name, how, a->name, b->name, a->name, b->name, b->name);
			return -EINVAL;
		}
	return 0;
}

static const struct hs_iface *named(const struct hs_config *cfg, int ifindex)
{
	for (int i = 0; i < cfg->n_ifaces; i++)
		if (cfg->ifaces[i].ifindex == ifindex)
			return &cfg->ifaces[i];
	return NULL;
}

static int pass(struct hs_config *cfg, const struct hs_link *l)
{
	for (int i = 0; i < cfg->n_pass; i++)
		if (cfg->pass_if[i] == (uint32_t)l->ifindex)
			return 0;
	if (cfg->n_pass == HS_MAX_IFACES) {
		fprintf(stderr, "hopscope: more than %d devices on the way to the outputs "
			"(bridges, bonds, VLANs above them; ifb devices): %s is one too many\n",
			HS_MAX_IFACES, l->name);
		return -E2BIG;
	}
	cfg->pass_if[cfg->n_pass] = l->ifindex;
	snprintf(cfg->pass_name[cfg->n_pass++], sizeof(cfg->pass_name[0]), "%s", l->name);
	return 0;
}

/* an output's L2 uppers at any depth are passed by: a packet routed to one
 * is stamped at t4 on the output, after its qdisc */
static int pass_uppers(struct hs_config *cfg, const struct hs_links *ls,
		       const struct hs_iface *o, const struct hs_link *x, int depth)
{
	char how[512];
	int err = 0;

	for (int i = 0; !err && depth < MAX_DEPTH && i < ls->n; i++) {
		const struct hs_link *u = &ls->l[i];

		/* an upper that is itself an --out: refused before (check_pairs) */
		if (!l2_upper(x, u))
			continue;
		snprintf(how, sizeof(how), "%s", o->name);
		chain(ls, by_index(ls, o->ifindex), u->ifindex, how, sizeof(how), 0);
		fprintf(stderr, "hopscope: %s: packets routed to %s are stamped at %s's hand-over "
			"(after %s and %s's qdisc)\n", how, u->name, o->name, u->name, o->name);
		err = pass(cfg, u) ?: pass_uppers(cfg, ls, o, u, depth + 1);
	}
	return err;
}

static bool followed(const struct hs_config *cfg, const struct hs_link *l)
{
	for (int i = 0; i < cfg->n_tun; i++)
		if (cfg->tun_if[i] == (uint32_t)l->ifindex)
			return true;
	return false;
}

/* what an output's place in the stack means for t4, said at start */
static void say_output(const struct hs_config *cfg, const struct hs_links *ls,
		       const struct hs_link *o)
{
	const struct hs_link *under = by_index(ls, o->link);
	char lowers[256] = "";

	if (tunnel(o->kind) && followed(cfg, o))
		fprintf(stderr, "hopscope: %s is %s %s tunnel: its packets are followed through "
			"the encapsulation to the hand-over to its underlay%s%s (t4), tun_out at "
			"%s's start_xmit\n", o->name, article(o->kind), o->kind, under ? " " : "",
			under ? under->name : "", o->name);
	else if (tunnel(o->kind))
		fprintf(stderr, "hopscope: %s is %s %s tunnel whose underlay is in another "
			"namespace: t4 is the inner packet's hand-over to %s, the underlay's queue "
			"is not measured\n", o->name, article(o->kind), o->kind, o->name);
	for (int i = 0; i < ls->n; i++) {
		const struct hs_link *l = &ls->l[i];
		size_t used = strlen(lowers);

		if (l2_upper(l, o))
			snprintf(lowers + used, sizeof(lowers) - used, "%s%s", used ? ", " : "",
				 l->name);
		else if (tunnel(l->kind) && l->link == o->ifindex && !named(cfg, l->ifindex))
			fprintf(stderr, "hopscope: %s is the underlay of %s tunnel %s: packets "
				"routed to %s are followed through the encapsulation to their "
				"hand-over to %s (t4), tun_out at %s's start_xmit\n", o->name,
				l->kind, l->name, l->name, o->name, l->name);
	}
	if (lowers[0])
		fprintf(stderr, "hopscope: %s is %s %s over %s: t4 is the hand-over to %s, before "
			"the qdisc of %s; name %s in --out instead to stamp after it\n", o->name,
			article(kind_word(o->kind)), kind_word(o->kind), lowers, o->name, lowers,
			lowers);
}

/* br_netfilter runs a bridge's IPv4 (af 0) or IPv6 (1) packets through
 * PRE_ROUTING when the netns's sysctl or the bridge's own option says so
 * (br_nf_pre_routing); without the module, neither */
static bool bridge_calls(const struct hs_link *br, int af)
{
	char path[64], c = '0';
	FILE *f;

	snprintf(path, sizeof(path), "/proc/sys/net/bridge/bridge-nf-call-ip%stables",
		 af ? "6" : "");
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fread(&c, 1, 1, f) != 1)
		c = '0';
	fclose(f);
	return c == '1' || br->nf_call[af];
}

/* the bridge an input is a port of, through bonds or teams; NULL: none */
static const struct hs_link *bridge_of(const struct hs_links *ls, const struct hs_link *x)
{
	for (int d = 0; x && d < MAX_DEPTH; d++) {
		x = by_index(ls, x->master);
		if (x && !strcmp(x->kind, "bridge"))
			return x;
	}
	return NULL;
}

/* ---- JSON from nft and tc --------------------------------------------------- */

/* a JSON string at p (its opening quote) into out, cut to len; the byte after
 * its closing quote, NULL if it has none. Escapes other than \uXXXX become the
 * character; \uXXXX, '?' (no interface name has one) */
static const char *jstring(const char *p, char *out, size_t len)
{
	size_t n = 0;

	for (p++; *p && *p != '"'; p++) {
		char c = *p;

		if (c == '\\') {
			c = *++p;
			if (!c)
				return NULL;
			if (c == 'u') {
				c = '?';
				for (int i = 0; i < 4 && p[1]; i++)
					p++;
			}
		}
		if (n + 1 < len)
			out[n++] = c;
	}
	out[n] = 0;
	return *p ? p + 1 : NULL;
}

/*
 * fn(ctx, value) for each string value of a member named key anywhere in the
 * JSON text, and for each string of an array value (nft writes a flowtable's
 * one device as a string, several as an array). Not a parser: the text is
 * tc's or nft's own output, and strings are stepped over whole, so a key is
 * never matched inside one.
 */
static void json_each(const char *p, const char *key, void (*fn)(void *ctx, const char *v),
		      void *ctx)
{
	static const char ws[] = " \t\r\n";
	char s[256];

	while (p && (p = strchr(p, '"'))) {
		bool many;

		p = jstring(p, s, sizeof(s));
		if (!p)
			return;
		p += strspn(p, ws);
		if (*p != ':' || strcmp(s, key))
			continue;
		p += 1 + strspn(p + 1, ws);
		many = *p == '[';
		if (many)
			p += 1 + strspn(p + 1, ws);
		while (p && *p == '"') {
			p = jstring(p, s, sizeof(s));
			if (!p)
				return;
			fn(ctx, s);
			if (!many)
				break;
			p += strspn(p, ws);
			if (*p == ',')
				p += 1 + strspn(p + 1, ws);
		}
	}
}

struct tc_scan {
	const struct hs_links *ls;
	struct hs_iface *ifc;
	const char *ifb;	/* the ifb it redirects to, for the start line */
};

static void tc_kind(void *ctx, const char *v)
{
	struct tc_scan *t = ctx;

	/* cls_bpf or act_bpf: hopscope's own tc programs are tcx links */
	if (!strcmp(v, "bpf"))
		t->ifc->fast |= HS_IFP_TC_FOREIGN;
}

static void tc_to_dev(void *ctx, const char *v)
{
	struct tc_scan *t = ctx;

	for (int i = 0; i < t->ls->n; i++)
		if (!strcmp(t->ls->l[i].name, v) && !strcmp(t->ls->l[i].kind, "ifb")) {
			t->ifc->fast |= HS_IFP_IFB;
			t->ifb = t->ls->l[i].name;
		}
}

static void flowtable_dev(void *ctx, const char *v)
{
	struct hs_config *cfg = ctx;

	for (int i = 0; i < cfg->n_ifaces; i++)
		if (cfg->ifaces[i].is_in && !strcmp(cfg->ifaces[i].name, v))
			cfg->ifaces[i].fast |= HS_IFP_FLOWTABLE;
}

/* an input's tc ingress: a foreign BPF program (tcx, before hopscope's own
 * attaches, or cls_bpf), a redirect to an ifb */
static void tc_ingress(const struct hs_links *ls, struct hs_iface *ifc)
{
	char *argv[] = { "tc", "-j", "filter", "show", "dev", ifc->name, "ingress", NULL };
	LIBBPF_OPTS(bpf_prog_query_opts, q);
	struct tc_scan t = { .ls = ls, .ifc = ifc };
	char *out = hs_run_output(argv);

	if (!bpf_prog_query_opts(ifc->ifindex, BPF_TCX_INGRESS, &q) && q.count)
		ifc->fast |= HS_IFP_TC_FOREIGN;
	json_each(out, "kind", tc_kind, &t);
	json_each(out, "to_dev", tc_to_dev, &t);
	free(out);
	if (t.ifb)
		fprintf(stderr, "hopscope: %s's tc ingress redirects to %s: its packets wait in "
			"%s's qdisc before PRE_ROUTING, inside d_iq\n", ifc->name, t.ifb, t.ifb);
}

/* ---- tunnels ------------------------------------------------------------------ */

/* a WireGuard device's listen port (wg show: rtnetlink does not tell it); 0: unknown */
static uint16_t wg_port(const char *name)
{
	char *argv[] = { "wg", "show", (char *)name, "listen-port", NULL };
	char *out = hs_run_output(argv);
	long port = out ? strtol(out, NULL, 10) : 0;

	free(out);
	return port > 0 && port < 65536 ? port : 0;
}

static int add_u32(uint32_t *set, int *n, uint32_t v, const char *what, const char *name)
{
	for (int i = 0; i < *n; i++)
		if (set[i] == v)
			return 0;
	if (*n == HS_MAX_IFACES) {
		fprintf(stderr, "hopscope: more than %d %s: %s is one too many\n", HS_MAX_IFACES,
			what, name);
		return -E2BIG;
	}
	set[(*n)++] = v;
	return 0;
}

/* an outer packet of l's that a tunnel named in --in shares (LOCAL_IN could
 * not tell whose it is); NULL: none */
static const struct hs_link *shared_ep(const struct hs_config *cfg, const struct hs_links *ls,
				       const struct hs_link *l)
{
	for (int i = 0; i < ls->n; i++) {
		const struct hs_link *t = &ls->l[i];
		const struct hs_iface *ifc = named(cfg, t->ifindex);

		if (t == l || !ifc || !ifc->is_in)
			continue;
		for (int a = 0; a < 2; a++)
			for (int b = 0; l->ep[a] && b < 2; b++)
				if (l->ep[a] == t->ep[b])
					return t;
	}
	return NULL;
}

/* a tunnel whose outer packets are not followed (IPsec's vti: the decrypted
 * packet is a new skb; a WireGuard device whose port is unknown): where they
 * may arrive by a traced input (over one, or WireGuard's, over any), its
 * inner packets are counted at POST_ROUTING (in_nometa) */
static int unfollowed(struct hs_config *cfg, const struct hs_link *l)
{
	const struct hs_iface *under = named(cfg, l->link);

	if ((!under || !under->is_in) && strcmp(l->kind, "wireguard"))
		return 0;
	fprintf(stderr, "hopscope: warning: hopscope does not follow the outer packets of %s "
		"tunnel %s: arriving by a traced input, they are retired as local, and the "
		"inner ones it forwards are counted (in_nometa), not recorded; name %s in --in "
		"to record them\n", l->kind, l->name, l->name);
	return add_u32(cfg->lost_if, &cfg->n_lost, l->ifindex, "unfollowed tunnels", l->name);
}

/*
 * The tunnels followed (tunnel.bpf.h): every tunnel of the netns that is up
 * and whose underlay is in it, and the outer packets of those not named in --in (one
 * named there takes t1 itself, after decapsulation: its outer packets are
 * the router's own). A tunnel in --in whose outer packets look like another
 * one's is refused: LOCAL_IN could not tell them apart.
 */
static int tunnels(struct hs_config *cfg, struct hs_links *ls)
{
	int err = 0;

	for (int i = 0; !err && i < ls->n; i++) {
		struct hs_link *l = &ls->l[i];
		const struct hs_iface *ifc = named(cfg, l->ifindex);
		const struct hs_link *t;

		/* down: nothing in or out (the fallback devices gre0, tunl0 that
		 * loading a module makes in every netns) */
		if (!tunnel(l->kind) || l->link_netns || !l->up)
			continue;
		if (!strcmp(l->kind, "wireguard")) {
			uint16_t port = wg_port(l->name);

			if (port)
				l->ep[0] = (uint32_t)IPPROTO_UDP << 16 | port;
			else
				fprintf(stderr, "hopscope: warning: cannot read WireGuard %s's listen "
					"port (wg show)\n", l->name);
		}
		if (strncmp(l->kind, "vti", 3))
			err = add_u32(cfg->tun_if, &cfg->n_tun, l->ifindex, "tunnel devices",
				      l->name);
		if (err || (ifc && ifc->is_in))
			continue;
		if (!l->ep[0]) {
			err = unfollowed(cfg, l);
			continue;
		}
		t = shared_ep(cfg, ls, l);
		if (t) {
			fprintf(stderr, "hopscope: --in names tunnel %s, whose outer packets look like "
				"those of tunnel %s (the same protocol and port): hopscope cannot tell "
				"which is whose; name neither tunnel (the inner packets are followed "
				"from the outer one's arrival) or both\n", t->name, l->name);
			return -EINVAL;
		}
		for (int a = 0; !err && a < 2; a++)
			if (l->ep[a] && l->ep[a] != (uint32_t)IPPROTO_UDP << 16)
				err = add_u32(cfg->tun_ep, &cfg->n_tun_ep, l->ep[a],
					      "kinds of tunnel packets", l->name);
	}
	if (!err && cfg->n_tun_ep)
		fprintf(stderr, "hopscope: the outer packets of the netns's tunnels are followed "
			"into them: an inner packet's t1 is its outer packet's arrival, tun_in its "
			"own on the tunnel device\n");
	return err;
}

/* ---- at start ----------------------------------------------------------------- */

static void say_input(const struct hs_link *x)
{
	bool v4 = !strcmp(x->kind, "bridge") && bridge_calls(x, 0);

	if (!v4 && (strcmp(x->kind, "bridge") || !bridge_calls(x, 1)))
		return;
	fprintf(stderr, "hopscope: warning: %s is a bridge that calls ip%stables "
		"(bridge-nf-call-ip%stables=1): PRE_ROUTING runs inside the bridge before %s's "
		"XDP, so t2 comes before t1 and its packets are recorded partial; name the "
		"bridge's ports in --in to measure d_iq\n", x->name, v4 ? "" : "6", v4 ? "" : "6",
		x->name);
}

int hs_ifstack_check(struct hs_config *cfg)
{
	char *argv[] = { "nft", "-j", "list", "flowtables", NULL };
	struct hs_links ls;
	char *nft;
	int err = hs_links_read(&ls);

	if (err) {
		fprintf(stderr, "hopscope: cannot list the namespace's devices (rtnetlink): %s\n",
			strerror(-err));
		return err;
	}
	err = check_pairs(cfg, &ls, false) ?: check_pairs(cfg, &ls, true) ?: tunnels(cfg, &ls);
	for (int i = 0; !err && i < cfg->n_ifaces; i++) {
		struct hs_iface *ifc = &cfg->ifaces[i];
		const struct hs_link *x = by_index(&ls, ifc->ifindex), *br;

		if (!x)
			continue;
		if (ifc->is_out) {
			say_output(cfg, &ls, x);
			err = pass_uppers(cfg, &ls, ifc, x, 0);
		}
		if (!ifc->is_in)
			continue;
		say_input(x);
		br = bridge_of(&ls, x);
		if (br && bridge_calls(br, 0))
			ifc->fast |= HS_IFP_BR_NF4;
		if (br && bridge_calls(br, 1))
			ifc->fast |= HS_IFP_BR_NF6;
		tc_ingress(&ls, ifc);
	}
	/* an ifb's transmit hands the packet back into the stack: not an output */
	for (int i = 0; !err && i < ls.n; i++)
		if (!strcmp(ls.l[i].kind, "ifb") && !named(cfg, ls.l[i].ifindex))
			err = pass(cfg, &ls.l[i]);
	hs_links_free(&ls);
	if (err)
		return err;
	nft = hs_run_output(argv);
	cfg->flowtables_known = nft != NULL;
	json_each(nft, "dev", flowtable_dev, cfg);
	free(nft);
	return 0;
}

void hs_ifstack_json(struct js *j, const struct hs_links *ls, const struct hs_iface *ifc)
{
	const struct hs_link *x = by_index(ls, ifc->ifindex), *m = x ? by_index(ls, x->master) : NULL;

	js_open(j, "fast_paths", '[');
	for (size_t b = 0; b < sizeof(ifp_names) / sizeof(ifp_names[0]); b++)
		if (ifc->fast & 1u << b)
			js_str(j, NULL, ifp_names[b]);
	js_close(j, ']');
	js_str(j, "master", m ? m->name : NULL);
	/* any stacking, tunnels and VRFs too: what the router is made of */
	js_open(j, "upper", '[');
	for (int i = 0; x && i < ls->n; i++)
		if (ls->l[i].ifindex == x->master || ls->l[i].link == x->ifindex)
			js_str(j, NULL, ls->l[i].name);
	js_close(j, ']');
	js_open(j, "lower", '[');
	for (int i = 0; x && i < ls->n; i++)
		if (ls->l[i].master == x->ifindex || ls->l[i].ifindex == x->link)
			js_str(j, NULL, ls->l[i].name);
	js_close(j, ']');
}
