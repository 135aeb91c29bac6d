// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * localsa's routing epoch: an OpenSM event plugin (event_plugin_name localsaepoch).
 *
 * It keeps a number that changes whenever OpenSM's PathRecord answers may change
 * (unicast routing done with changed LFTs, a port's MTU or rate, the partition or QoS
 * policy files, this SM becoming master) and publishes it to the local SAs:
 *  - a ServiceRecord (ServiceID 0x100000004c534145, "localsa.routing-epoch", the epoch in
 *    ServiceData64[0], the SM port GUID in ServiceData64[1]) the nodes read at start and
 *    after a resync;
 *  - a vendor Report (DeviceID 0x4c53, "LSAE" + epoch + SM port GUID in DataDetails) to
 *    the ports subscribed to it.
 *
 * OpenSM calls report() from its own threads, sometimes with its lock held: report() only
 * records what happened under a private mutex and wakes the plugin's thread, which takes
 * OpenSM's lock to read the fabric, update the record and send the Report.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <opensm/osm_event_plugin.h>
#include <opensm/osm_inform.h>
#include <opensm/osm_node.h>
#include <opensm/osm_opensm.h>
#include <opensm/osm_port.h>
#include <opensm/osm_service.h>
#include <opensm/osm_switch.h>
#include <opensm/osm_version.h>

#define LSAE_SERVICE_ID 0x100000004c534145ULL
#define LSAE_SERVICE_NAME "localsa.routing-epoch"
#define LSAE_DEV_ID 0x4c53
#define LSAE_VENDOR_ID 0x4c5341 /* "LSA": no OUI of ours; subscribers match by DeviceID */

struct lsae {
	osm_opensm_t *osm;
	pthread_t thread;
	pthread_mutex_t mutex; /* guards the fields below, never held with osm->lock */
	pthread_cond_t cond;
	int stop;
	int work;	 /* something to look at */
	int lft_changed; /* an LFT block changed since the last routing done */
	int routed;	 /* routing done since the thread last looked */
	int master;	 /* became master */
	/* the thread's own state */
	uint64_t epoch;
	uint64_t fabric_hash;
	uint64_t config_hash;
	int published;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		h = (h ^ *b++) * 0x100000001b3ULL;
	return h;
}

static uint64_t file_hash(uint64_t h, const char *path)
{
	char buf[4096];
	size_t n;
	FILE *f;

	if (!path)
		return h;
	f = fopen(path, "r");
	if (!f)
		return fnv(h, "-", 1);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		h = fnv(h, buf, n);
	fclose(f);
	return h;
}

/* What a PathRecord's MTU and rate come from: every link's MTU, width and speed. */
static uint64_t fabric_hash(osm_subn_t *subn)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	cl_map_item_t *item;

	for (item = cl_qmap_head(&subn->node_guid_tbl);
	     item != cl_qmap_end(&subn->node_guid_tbl); item = cl_qmap_next(item)) {
		osm_node_t *node = (osm_node_t *)item;
		uint32_t i, n = osm_node_get_num_physp(node);
		ib_net64_t guid = osm_node_get_node_guid(node);

		for (i = 0; i < n; i++) {
			osm_physp_t *p = osm_node_get_physp_ptr(node, i);
			const ib_port_info_t *pi;

			if (!p || !osm_physp_is_valid(p) || !osm_physp_get_remote(p))
				continue;
			pi = &p->port_info;
			h = fnv(h, &guid, sizeof(guid));
			h = fnv(h, &i, sizeof(i));
			h = fnv(h, &pi->link_width_active, 1);
			h = fnv(h, &pi->link_speed, 1);
			h = fnv(h, &pi->mtu_smsl, 1);
			h = fnv(h, &pi->link_speed_ext, 1);
		}
	}
	return h;
}

static uint64_t config_hash(osm_opensm_t *osm)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	h = file_hash(h, osm->subn.opt.partition_config_file);
	h = fnv(h, &osm->subn.opt.qos, sizeof(osm->subn.opt.qos));
	if (osm->subn.opt.qos)
		h = file_hash(h, osm->subn.opt.qos_policy_file);
	return h;
}

static void publish(struct lsae *e)
{
	osm_opensm_t *osm = e->osm;
	osm_subn_t *subn = &osm->subn;
	ib_service_record_t rec;
	ib_mad_notice_attr_t ntc;
	osm_svcr_t *svcr;
	ib_net64_t sm_guid = subn->sm_port_guid;
	ib_net64_t epoch = cl_hton64(e->epoch);

	memset(&rec, 0, sizeof(rec));
	rec.service_id = cl_hton64(LSAE_SERVICE_ID);
	rec.service_gid.unicast.prefix = subn->opt.subnet_prefix;
	rec.service_gid.unicast.interface_id = sm_guid;
	rec.service_pkey = IB_DEFAULT_PKEY;
	rec.service_lease = 0xffffffff; /* infinite */
	strncpy((char *)rec.service_name, LSAE_SERVICE_NAME, sizeof(rec.service_name));
	rec.service_data64[0] = epoch;
	rec.service_data64[1] = sm_guid;

	svcr = osm_svcr_get_by_rid(subn, &osm->log, &rec);
	if (svcr) {
		svcr->service_record = rec;
	} else {
		svcr = osm_svcr_new(&rec);
		if (svcr)
			osm_svcr_insert_to_db(subn, &osm->log, svcr);
	}

	/* Vendor notice: DeviceID is the "trap number" a subscriber matches on. */
	memset(&ntc, 0, sizeof(ntc));
	ntc.generic_type = 4; /* informational, not generic */
	ib_notice_set_vend_id_ho(&ntc, LSAE_VENDOR_ID);
	ntc.g_or_v.vend.dev_id = cl_hton16(LSAE_DEV_ID);
	ntc.issuer_lid = subn->sm_base_lid;
	ntc.issuer_gid = rec.service_gid;
	memcpy(ntc.data_details.raw_data.details, "LSAE", 4);
	memcpy(ntc.data_details.raw_data.details + 4, &epoch, 8);
	memcpy(ntc.data_details.raw_data.details + 12, &sm_guid, 8);
	osm_report_notice(&osm->log, subn, &ntc);

	OSM_LOG(&osm->log, OSM_LOG_INFO, "localsa routing epoch %" PRIu64 "\n", e->epoch);
	e->published = 1;
}

static void look(struct lsae *e, int routed, int lft_changed, int master)
{
	osm_opensm_t *osm = e->osm;
	uint64_t fh, ch;
	int changed;

	/* Outside OpenSM's lock: reading the policy files may block. */
	ch = config_hash(osm);
	cl_plock_excl_acquire(&osm->lock);
	if (osm->subn.sm_state != IB_SMINFO_STATE_MASTER) {
		cl_plock_release(&osm->lock);
		return;
	}
	fh = fabric_hash(&osm->subn);
	changed = !e->published || master || (routed && lft_changed) || fh != e->fabric_hash ||
		  ch != e->config_hash;
	e->fabric_hash = fh;
	e->config_hash = ch;
	if (changed) {
		e->epoch++;
		publish(e);
	}
	cl_plock_release(&osm->lock);
}

static void *run(void *arg)
{
	struct lsae *e = arg;

	pthread_mutex_lock(&e->mutex);
	for (;;) {
		int routed, lft_changed, master;

		while (!e->work && !e->stop)
			pthread_cond_wait(&e->cond, &e->mutex);
		if (e->stop)
			break;
		routed = e->routed;
		lft_changed = e->lft_changed;
		master = e->master;
		e->work = e->routed = e->master = 0;
		if (routed)
			e->lft_changed = 0;
		pthread_mutex_unlock(&e->mutex);
		look(e, routed, lft_changed, master);
		pthread_mutex_lock(&e->mutex);
	}
	pthread_mutex_unlock(&e->mutex);
	return NULL;
}

static void *lsae_create(osm_opensm_t *osm)
{
	struct lsae *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->osm = osm;
	/* Distinct across SM restarts: a restarted master must not repeat an old epoch. */
	e->epoch = (uint64_t)time(NULL) << 20;
	pthread_mutex_init(&e->mutex, NULL);
	pthread_cond_init(&e->cond, NULL);
	if (pthread_create(&e->thread, NULL, run, e)) {
		pthread_cond_destroy(&e->cond);
		pthread_mutex_destroy(&e->mutex);
		free(e);
		return NULL;
	}
	OSM_LOG(&osm->log, OSM_LOG_INFO, "localsa routing epoch plugin loaded\n");
	return e;
}

static void lsae_delete(void *data)
{
	struct lsae *e = data;

	if (!e)
		return;
	pthread_mutex_lock(&e->mutex);
	e->stop = 1;
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->mutex);
	pthread_join(e->thread, NULL);
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->mutex);
	free(e);
}

/* Called in OpenSM's threads, maybe under its lock: record and wake the thread, no more. */
static void lsae_report(void *data, osm_epi_event_id_t id, void *event)
{
	struct lsae *e = data;

	(void)event;
	if (!e)
		return;
	pthread_mutex_lock(&e->mutex);
	switch (id) {
	case OSM_EVENT_ID_LFT_CHANGE:
		e->lft_changed = 1;
		break;
	case OSM_EVENT_ID_UCAST_ROUTING_DONE:
		e->routed = 1;
		e->work = 1;
		break;
	case OSM_EVENT_ID_STATE_CHANGE:
		e->master = 1;
		e->work = 1;
		break;
	case OSM_EVENT_ID_SUBNET_UP:
	case OSM_EVENT_ID_HEAVY_SWEEP_DONE:
		e->work = 1; /* MTU, rate and policy files compared */
		break;
	default:
		break;
	}
	if (e->work)
		pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->mutex);
}

osm_event_plugin_t osm_event_plugin = {
	.osm_version = OSM_VERSION,
	.create = lsae_create,
	.delete = lsae_delete,
	.report = lsae_report,
};
