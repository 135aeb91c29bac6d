/*
 * sa_flood: send a known number of SubnAdmGet(PathRecord) queries to the SM (or any LID) and
 * count the answers. Used to check that `scripts/fabric sa-count` counts exactly what reaches
 * OpenSM, and to measure what --count-sa costs. Runs as a libibumad client, under umad2sim:
 *   scripts/fabric run --dir DIR --node H3 -- sa_flood --count 2000 --depth 16 \
 *       --slid 5 --dlid 9,10,11 [--lid SMLID]
 * Prints one line: "sent N answered N ok N errors N timeouts N seconds S rate R"; with --latency
 * a second line "latency_us p50 X p99 Y max Z" (answered queries, send to receive).
 * Exit status 0 only if every query got a GetResp with status 0.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/mad.h>
#include <infiniband/umad.h>

#define SA_CLASS 0x03
#define SA_CLASS_VERSION 2
#define PR_ATTR 0x0035
#define MAX_DLIDS 4096
#define MAX_DEPTH 256

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: sa_flood --slid L --dlid L[,L...] [--count N] [--depth D] [--lid SALID]\n"
		"                [--timeout MS] [--ca NAME] [--port N] [--latency]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned count = 100, depth = 1, slid = 0, salid = 0, timeout_ms = 2000, port = 0;
	unsigned dlids[MAX_DLIDS], ndlids = 0;
	char *ca = NULL;
	int latency = 0;
	static const struct option opts[] = {
		{"count", 1, NULL, 'n'}, {"depth", 1, NULL, 'd'}, {"slid", 1, NULL, 's'},
		{"dlid", 1, NULL, 'D'},	 {"lid", 1, NULL, 'l'},	  {"timeout", 1, NULL, 't'},
		{"ca", 1, NULL, 'C'},	 {"port", 1, NULL, 'P'},  {"help", 0, NULL, 'h'},
		{"latency", 0, NULL, 'L'},
		{}};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n': count = strtoul(optarg, NULL, 0); break;
		case 'd': depth = strtoul(optarg, NULL, 0); break;
		case 's': slid = strtoul(optarg, NULL, 0); break;
		case 'l': salid = strtoul(optarg, NULL, 0); break;
		case 't': timeout_ms = strtoul(optarg, NULL, 0); break;
		case 'C': ca = optarg; break;
		case 'P': port = strtoul(optarg, NULL, 0); break;
		case 'L': latency = 1; break;
		case 'D': {
			char *p = optarg;
			while (*p && ndlids < MAX_DLIDS) {
				dlids[ndlids++] = strtoul(p, &p, 0);
				if (*p == ',')
					p++;
				else if (*p)
					usage();
			}
			break;
		}
		default: usage();
		}
	}
	if (!slid || !ndlids || !count || depth < 1 || depth > MAX_DEPTH)
		usage();

	if (umad_init() < 0) {
		fprintf(stderr, "sa_flood: umad_init failed\n");
		return 1;
	}
	umad_port_t uport;
	if (umad_get_port(ca, port, &uport) < 0) {
		fprintf(stderr, "sa_flood: cannot read port\n");
		return 1;
	}
	if (!salid)
		salid = uport.sm_lid;
	int fd = umad_open_port(ca, port);
	if (fd < 0) {
		fprintf(stderr, "sa_flood: cannot open port\n");
		return 1;
	}
	int agent = umad_register(fd, SA_CLASS, SA_CLASS_VERSION, 0, NULL);
	if (agent < 0) {
		fprintf(stderr, "sa_flood: cannot register SA agent\n");
		return 1;
	}

	size_t len = umad_size() + 256;
	void *req = calloc(1, len), *resp = calloc(1, len);
	unsigned sent = 0, answered = 0, ok = 0, errors = 0, timeouts = 0, inflight = 0;
	uint32_t tid = 0x1000;
	/* send time of query i (TID 0x1001 + i); latencies of the answered ones */
	double *sent_at = calloc(count, sizeof(double)), *lat = calloc(count, sizeof(double));
	unsigned nlat = 0;
	if (!sent_at || !lat) {
		fprintf(stderr, "sa_flood: out of memory\n");
		return 1;
	}
	double t0 = now();

	while (answered + timeouts < count) {
		while (inflight < depth && sent < count) {
			memset(req, 0, len);
			uint8_t *mad = umad_get_mad(req);
			mad_set_field(mad, 0, IB_MAD_BASEVER_F, 1);
			mad_set_field(mad, 0, IB_MAD_MGMTCLASS_F, SA_CLASS);
			mad_set_field(mad, 0, IB_MAD_CLASSVER_F, SA_CLASS_VERSION);
			mad_set_field(mad, 0, IB_MAD_METHOD_F, IB_MAD_METHOD_GET);
			/* low 32 bits only (mad_set_field would put a 32-bit value in the high half) */
			mad_set_field64(mad, 0, IB_MAD_TRID_F, ++tid);
			mad_set_field(mad, 0, IB_MAD_ATTRID_F, PR_ATTR);
			/* component mask: DLID (bit 4), SLID (bit 5) */
			mad_set_field64(mad, 0, IB_SA_COMPMASK_F, (1ULL << 4) | (1ULL << 5));
			uint8_t *pr = mad + IB_SA_DATA_OFFS;
			mad_set_field(pr, 0, IB_SA_PR_DLID_F, dlids[sent % ndlids]);
			mad_set_field(pr, 0, IB_SA_PR_SLID_F, slid);
			umad_set_addr(req, salid, 1, 0, IB_DEFAULT_QP1_QKEY);
			if (umad_send(fd, agent, req, 256, timeout_ms, 0) < 0) {
				fprintf(stderr, "sa_flood: umad_send: %s\n", strerror(errno));
				return 1;
			}
			sent_at[sent] = now();
			sent++;
			inflight++;
		}
		int rlen = 256;
		int r = umad_recv(fd, resp, &rlen, (int)timeout_ms);
		if (r < 0) {
			if (errno == ETIMEDOUT) {
				timeouts += inflight;
				inflight = 0;
				fprintf(stderr, "sa_flood: receive timeout\n");
				break;
			}
			continue;
		}
		inflight--;
		if (umad_status(resp)) {
			timeouts++;
			continue;
		}
		answered++;
		uint8_t *mad = umad_get_mad(resp);
		/* low 32 bits of the TID: MAD bytes 12-15, big endian */
		uint32_t rtid = (uint32_t)mad[12] << 24 | (uint32_t)mad[13] << 16 |
				(uint32_t)mad[14] << 8 | mad[15];
		if (rtid > 0x1000 && rtid - 0x1001 < sent && nlat < count)
			lat[nlat++] = now() - sent_at[rtid - 0x1001];
		/* libibmad keeps the response bit apart from the 7-bit method */
		if (mad_get_field(mad, 0, IB_MAD_METHOD_F) == IB_MAD_METHOD_GET &&
		    mad_get_field(mad, 0, IB_MAD_RESPONSE_F) &&
		    mad_get_field(mad, 0, IB_MAD_STATUS_F) == 0)
			ok++;
		else {
			if (!errors)
				fprintf(stderr, "sa_flood: first error: method 0x%x status 0x%x\n",
					mad_get_field(mad, 0, IB_MAD_METHOD_F) |
						(mad_get_field(mad, 0, IB_MAD_RESPONSE_F) << 7),
					mad_get_field(mad, 0, IB_MAD_STATUS_F));
			errors++;
		}
	}
	double dt = now() - t0;
	printf("sent %u answered %u ok %u errors %u timeouts %u seconds %.3f rate %.0f\n", sent,
	       answered, ok, errors, timeouts, dt, dt > 0 ? answered / dt : 0.0);
	if (latency) {
		qsort(lat, nlat, sizeof(double), cmp_double);
		printf("latency_us p50 %.1f p99 %.1f max %.1f\n",
		       nlat ? lat[(nlat - 1) / 2] * 1e6 : 0.0,
		       nlat ? lat[(unsigned)((nlat - 1) * 0.99)] * 1e6 : 0.0,
		       nlat ? lat[nlat - 1] * 1e6 : 0.0);
	}
	free(sent_at);
	free(req);
	free(resp);
	free(lat);
	umad_unregister(fd, agent);
	umad_close_port(fd);
	umad_done();
	return (ok == count) ? 0 : 1;
}
