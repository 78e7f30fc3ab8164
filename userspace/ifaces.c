/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#define _GNU_SOURCE	/* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ifaces.h"
#include "ifstack.h"

extern char **environ;

static int ethtool(const char *name, void *cmd)
{
	struct ifreq ifr = {};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_data = cmd;
	r = ioctl(fd, SIOCETHTOOL, &ifr) ? -errno : 0;
	close(fd);
	return r;
}

static struct hs_iface *find_or_add(struct hs_config *cfg, const char *name)
{
	struct hs_iface *ifc;

	for (int i = 0; i < cfg->n_ifaces; i++)
		if (!strcmp(cfg->ifaces[i].name, name))
			return &cfg->ifaces[i];
	if (cfg->n_ifaces == HS_MAX_IFACES) {
		fprintf(stderr, "hopscope: at most %d interfaces\n", HS_MAX_IFACES);
		return NULL;
	}
	ifc = &cfg->ifaces[cfg->n_ifaces];
	memset(ifc, 0, sizeof(*ifc));
	if (strlen(name) >= IFNAMSIZ) {
		fprintf(stderr, "hopscope: interface name too long: '%s'\n", name);
		return NULL;
	}
	snprintf(ifc->name, sizeof(ifc->name), "%s", name);
	ifc->ifindex = if_nametoindex(name);
	if (!ifc->ifindex) {
		fprintf(stderr, "hopscope: no interface '%s' in namespace '%s'\n", name,
			cfg->netns ? cfg->netns : "(current)");
		return NULL;
	}
	struct ethtool_drvinfo di = { .cmd = ETHTOOL_GDRVINFO };
	if (!ethtool(name, &di))
		snprintf(ifc->driver, sizeof(ifc->driver), "%s", di.driver);
	cfg->n_ifaces++;
	return ifc;
}

int hs_ifaces_add(struct hs_config *cfg, const char *list, int is_out)
{
	char *copy = strdup(list), *save = NULL, *name;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	for (name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		struct hs_iface *ifc = find_or_add(cfg, name);

		if (!ifc) {
			err = -ENODEV;
			break;
		}
		if (is_out)
			ifc->is_out = true;
		else
			ifc->is_in = true;
	}
	free(copy);
	return err;
}

int hs_ifaces_set_xdp_mode(struct hs_config *cfg, const char *mode)
{
	for (int i = 0; i < cfg->n_ifaces; i++) {
		struct hs_iface *ifc = &cfg->ifaces[i];

		bool veth = !strcmp(ifc->driver, "veth");

		ifc->xdp_auto = !strcmp(mode, "auto");
		if (!strcmp(mode, "generic")) {
			ifc->xdp_mode = XDP_FLAGS_SKB_MODE;
			ifc->xdp_why = "asked (--xdp-mode generic)";
		} else if (!strcmp(mode, "native")) {
			ifc->xdp_mode = XDP_FLAGS_DRV_MODE;
			ifc->xdp_why = "asked (--xdp-mode native)";
		} else if (ifc->xdp_auto) {
			/* native XDP moves veth receive onto NAPI: it cost ~0.15 of the
			 * forwarding rate by itself (evaluation/measurements.md: the floor) */
			ifc->xdp_mode = veth ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
			ifc->xdp_why = veth ? "auto: generic on veth, where native costs more" :
					      "auto: native, the driver's own";
		} else {
			fprintf(stderr, "hopscope: --xdp-mode must be auto, native or generic, not '%s'\n",
				mode);
			return -EINVAL;
		}
	}
	return 0;
}

int hs_ifaces_set_gro(struct hs_config *cfg)
{
	for (int i = 0; i < cfg->n_ifaces; i++) {
		struct hs_iface *ifc = &cfg->ifaces[i];
		struct ethtool_value gro = { .cmd = ETHTOOL_GGRO };

		if (!ifc->is_in)
			continue;
		ifc->gro_keep = false;
		if (!cfg->gro_keep)
			ifc->gro_why = "off (--gro off: one record per wire packet)";
		else if (ethtool(ifc->name, &gro) || !gro.data)
			ifc->gro_why = "off: the device's GRO is off";
		else if (ifc->xdp_mode != XDP_FLAGS_DRV_MODE)
			/* generic XDP runs after GRO: merged skbs are traced whole there */
			ifc->gro_why = "as the device does it: generic XDP runs after GRO";
		else {
			ifc->gro_keep = true;
			ifc->gro_why = "keep (--gro keep)";
		}
	}
	return 0;
}

static char *read_line(const char *fmt, const char *name)
{
	char path[256], buf[256];
	FILE *f;

	snprintf(path, sizeof(path), fmt, name);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return NULL;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return strdup(buf);
}

int hs_ifaces_tx(const struct hs_config *cfg, uint64_t tx[2])
{
	static const char *const what[] = { "tx_packets", "tx_dropped" };

	tx[0] = tx[1] = 0;
	for (int i = 0; i < cfg->n_ifaces; i++) {
		if (!cfg->ifaces[i].is_out)
			continue;
		for (int k = 0; k < 2; k++) {
			char fmt[64], *v;

			snprintf(fmt, sizeof(fmt), "/sys/class/net/%%s/statistics/%s", what[k]);
			v = read_line(fmt, cfg->ifaces[i].name);
			if (!v)
				return -1;
			tx[k] += strtoull(v, NULL, 10);
			free(v);
		}
	}
	return 0;
}

char *hs_run_output(char *const argv[])
{
	posix_spawn_file_actions_t fa;
	char *out = NULL, buf[4096];
	int p[2], status, err;
	size_t len = 0;
	ssize_t n;
	pid_t pid;
	FILE *m;

	if (pipe2(p, O_CLOEXEC))
		return NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (err) {
		close(p[0]);
		return NULL;
	}
	m = open_memstream(&out, &len);
	while ((n = read(p[0], buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		if (m)
			fwrite(buf, 1, n, m);
	}
	close(p[0]);
	if (m)
		fclose(m);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!m || !WIFEXITED(status) || WEXITSTATUS(status)) {
		free(out);
		return NULL;
	}
	return out;
}

char *hs_qdisc_json(const char *ifname)
{
	char *argv[] = { "tc", "-s", "-j", "qdisc", "show", "dev", (char *)ifname, NULL };
	char *out = hs_run_output(argv);

	if (out && out[0] != '[') {
		free(out);
		return NULL;
	}
	if (out)
		out[strcspn(out, "\n")] = 0;
	return out;
}

static const char *xdp_mode_name(const struct hs_iface *ifc)
{
	return !ifc->is_in ? NULL : ifc->xdp_mode == XDP_FLAGS_SKB_MODE ? "generic" : "native";
}

void hs_ifaces_xdp_json(struct js *j, const struct hs_config *cfg)
{
	js_open(j, "xdp_modes", '{');
	for (int i = 0; i < cfg->n_ifaces; i++)
		if (cfg->ifaces[i].is_in)
			js_str(j, cfg->ifaces[i].name, xdp_mode_name(&cfg->ifaces[i]));
	js_close(j, '}');
}

void hs_ifaces_json(struct js *j, const struct hs_config *cfg)
{
	struct hs_links ls;

	if (hs_links_read(&ls))
		ls.n = 0;	/* no stack said: each interface's lists empty */
	js_open(j, "interfaces", '[');
	for (int i = 0; i < cfg->n_ifaces; i++) {
		const struct hs_iface *ifc = &cfg->ifaces[i];
		struct ethtool_coalesce co = { .cmd = ETHTOOL_GCOALESCE };
		char *rps = read_line("/sys/class/net/%s/queues/rx-0/rps_cpus", ifc->name);
		char *mtu = read_line("/sys/class/net/%s/mtu", ifc->name);
		char *qd = hs_qdisc_json(ifc->name);

		js_open(j, NULL, '{');
		js_str(j, "name", ifc->name);
		js_u64(j, "ifindex", ifc->ifindex);
		js_str(j, "role", ifc->is_in && ifc->is_out ? "in,out" : ifc->is_in ? "in" : "out");
		js_str(j, "driver", ifc->driver[0] ? ifc->driver : NULL);
		js_str(j, "xdp_mode", xdp_mode_name(ifc));
		js_str(j, "xdp_mode_why", ifc->is_in ? ifc->xdp_why : NULL);
		js_str(j, "gro", ifc->is_in ? ifc->gro_keep ? "keep" : "off" : NULL);
		js_str(j, "gro_why", ifc->is_in ? ifc->gro_why : NULL);
		js_str(j, "rps_cpus", rps);
		js_u64(j, "mtu", mtu ? strtoul(mtu, NULL, 10) : 0);
		if (!ethtool(ifc->name, &co)) {
			js_open(j, "coalesce", '{');
			js_u64(j, "rx_usecs", co.rx_coalesce_usecs);
			js_u64(j, "rx_max_frames", co.rx_max_coalesced_frames);
			js_u64(j, "tx_usecs", co.tx_coalesce_usecs);
			js_u64(j, "tx_max_frames", co.tx_max_coalesced_frames);
			js_bool(j, "adaptive_rx", co.use_adaptive_rx_coalesce);
			js_close(j, '}');
		} else {
			js_raw(j, "coalesce", NULL);
		}
		js_raw(j, "qdisc", qd);
		hs_ifstack_json(j, &ls, ifc);
		js_close(j, '}');
		free(rps);
		free(mtu);
		free(qd);
	}
	js_close(j, ']');
	hs_links_free(&ls);
	js_open(j, "pass_ifaces", '[');
	for (int i = 0; i < cfg->n_pass; i++)
		js_str(j, NULL, cfg->pass_name[i]);
	js_close(j, ']');
	js_bool(j, "flowtables_known", cfg->flowtables_known);
}
