/* SPDX-License-Identifier: GPL-2.0 */
/*
 * simhca: a soft InfiniBand HCA for tests. QP0/QP1 carry MADs to and from a
 * user-space relay (simhca-relay) that bridges each device to one node of an
 * ibsim fabric; UD QPs carry datagrams between the simhca devices of the
 * guest, inside the driver.
 */
#ifndef SIMHCA_H
#define SIMHCA_H

#include <linux/list.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/version.h>
#include <linux/wait.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>

#include "simhca_abi.h"

#define SIMHCA_MAX_SGE		32
#define SIMHCA_MAX_UD_QP	64	/* per device */
#define SIMHCA_UD_QPN_BASE	0x48	/* QPN of the first UD QP */
#define SIMHCA_MAX_MCAST	256	/* attachments per device */
#define SIMHCA_MCAST_QPN	0xffffff
#define SIMHCA_MAX_QP_WR	4096
#define SIMHCA_MAX_CQE		65536	/* IPoIB asks 33153 with CM compiled in */
#define SIMHCA_RELAY_QUEUE	2048
#define SIMHCA_GRH_BYTES	40

struct simhca_pd {
	struct ib_pd ibpd;
};

struct simhca_ah {
	struct ib_ah ibah;
	struct rdma_ah_attr attr;
};

struct simhca_mr {
	struct ib_mr ibmr;
};

struct simhca_cq {
	struct ib_cq ibcq;
	spinlock_t lock;	/* protects the ring and notify */
	struct ib_wc *ring;
	unsigned int size;
	unsigned int head;	/* next to poll */
	unsigned int count;
	bool notify;
	unsigned long overflows;
};

struct simhca_recv_wqe {
	struct list_head list;
	u64 wr_id;
	int num_sge;
	struct ib_sge sge[SIMHCA_MAX_SGE];
};

struct simhca_qp {
	struct ib_qp ibqp;
	spinlock_t lock;	/* protects rq and state */
	struct list_head rq;
	unsigned int rq_len;
	enum ib_qp_state state;
	u32 qkey;
	u16 pkey_index;
	enum ib_sig_type sq_sig_type;
	unsigned long rx_dropped;
	bool block_mc_loopback;	/* IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK */
	unsigned int max_send_sge;
	unsigned int max_recv_sge;
};

/* one QP attached to one multicast group, on dev->mcast */
struct simhca_mcast {
	struct list_head list;
	union ib_gid mgid;
	u16 mlid;
	struct simhca_qp *qp;
};

/* the UD counters, /sys/class/infiniband/simhcaN/ports/1/hw_counters */
enum simhca_counter {
	SIMHCA_CNT_UD_TX,		/* datagrams sent (unicast + multicast) */
	SIMHCA_CNT_UD_TX_MCAST,
	SIMHCA_CNT_UD_RX,		/* datagrams that completed a receive */
	SIMHCA_CNT_UD_RX_MCAST,
	SIMHCA_CNT_DROP_NO_DEST,	/* no port with the DLID, no such QPN */
	SIMHCA_CNT_DROP_PKEY,		/* P_Key mismatch at the receiver */
	SIMHCA_CNT_DROP_QKEY,		/* Q_Key mismatch at the receiver */
	SIMHCA_CNT_DROP_DGID,		/* GRH DGID not the receiver's GID */
	SIMHCA_CNT_DROP_QP_STATE,	/* receiver QP not able to receive */
	SIMHCA_CNT_DROP_NO_RECV,	/* no posted receive */
	SIMHCA_CNT_RX_LEN_ERR,		/* receive buffer too small */
	SIMHCA_CNT_TX_ERR,		/* send error completions */
	SIMHCA_CNT_FLUSHED,		/* work requests flushed */
	SIMHCA_NUM_COUNTERS
};

/* one message queued for the relay */
struct simhca_pending {
	struct list_head list;
	struct simhca_msg msg;
};

struct simhca_dev {
	struct ib_device ibdev;
	int index;

	/* port attributes, protected by attr_lock */
	spinlock_t attr_lock;
	struct simhca_port attr;
	u32 local_cap_mask;

	/* the special QPs, protected by qp_lock */
	spinlock_t qp_lock;
	struct simhca_qp *qp[2];
	/* the UD QPs and multicast attachments, also under qp_lock */
	struct simhca_qp *ud_qp[SIMHCA_MAX_UD_QP];
	struct list_head mcast;
	unsigned int n_mcast;
	atomic64_t counters[SIMHCA_NUM_COUNTERS];
	struct list_head fabric;	/* on the guest's list of simhca devices */

	/* relay side */
	struct miscdevice misc;
	char misc_name[16];
	struct mutex relay_mutex;	/* one relay at a time */
	bool relay_open;
	spinlock_t tx_lock;		/* protects tx_queue and tx_len */
	struct list_head tx_queue;
	unsigned int tx_len;
	unsigned long tx_dropped;
	wait_queue_head_t tx_wait;
};

static inline struct simhca_dev *to_sdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct simhca_dev, ibdev);
}

static inline struct simhca_pd *to_spd(struct ib_pd *pd)
{
	return container_of(pd, struct simhca_pd, ibpd);
}

static inline struct simhca_ah *to_sah(struct ib_ah *ah)
{
	return container_of(ah, struct simhca_ah, ibah);
}

static inline struct simhca_cq *to_scq(struct ib_cq *cq)
{
	return container_of(cq, struct simhca_cq, ibcq);
}

static inline struct simhca_qp *to_sqp(struct ib_qp *qp)
{
	return container_of(qp, struct simhca_qp, ibqp);
}

/* create_cq's last argument changed from udata to an attribute bundle */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define SIMHCA_CQ_ARG struct uverbs_attr_bundle *attrs
#else
#define SIMHCA_CQ_ARG struct ib_udata *udata
#endif

/* simhca_verbs.c */
extern const struct ib_device_ops simhca_dev_ops;

/* simhca_cq.c */
int simhca_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		     SIMHCA_CQ_ARG);
int simhca_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int simhca_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int simhca_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
void simhca_cq_complete(struct simhca_cq *cq, const struct ib_wc *wc);

/* simhca_qp.c */
int simhca_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		     struct ib_udata *udata);
int simhca_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		     int mask, struct ib_udata *udata);
int simhca_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		    int mask, struct ib_qp_init_attr *init);
int simhca_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int simhca_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		     const struct ib_send_wr **bad_wr);
int simhca_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		     const struct ib_recv_wr **bad_wr);
void simhca_deliver(struct simhca_dev *sdev, const struct simhca_mad *mad);

/* simhca_ud.c */
void simhca_fabric_join(struct simhca_dev *sdev);
void simhca_fabric_leave(struct simhca_dev *sdev);
int simhca_ud_create(struct simhca_dev *sdev, struct simhca_qp *qp,
		     struct ib_qp_init_attr *init);
void simhca_ud_destroy(struct simhca_dev *sdev, struct simhca_qp *qp);
int simhca_ud_modify(struct simhca_qp *qp, struct ib_qp_attr *attr, int mask);
int simhca_ud_post_send(struct simhca_qp *qp, const struct ib_send_wr *wr,
			const struct ib_send_wr **bad_wr);
int simhca_ud_post_recv(struct simhca_qp *qp, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);
int simhca_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int simhca_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
struct rdma_hw_stats *simhca_alloc_hw_port_stats(struct ib_device *ibdev,
						 u32 port);
int simhca_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
			u32 port, int index);

static inline void simhca_count(struct simhca_dev *sdev, enum simhca_counter c)
{
	atomic64_inc(&sdev->counters[c]);
}

/* simhca_port.c */
void simhca_port_init(struct simhca_dev *sdev);
void simhca_port_update(struct simhca_dev *sdev, const struct simhca_port *p,
			u32 flags);
void simhca_port_down(struct simhca_dev *sdev);
bool simhca_lid_is_local(struct simhca_dev *sdev, u16 dlid, u16 *lid);
int simhca_query_port(struct ib_device *ibdev, u32 port,
		      struct ib_port_attr *attr);
int simhca_modify_port(struct ib_device *ibdev, u32 port, int mask,
		       struct ib_port_modify *props);
int simhca_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
		      u16 *pkey);
int simhca_query_gid(struct ib_device *ibdev, u32 port, int index,
		     union ib_gid *gid);

/* simhca_cdev.c */
int simhca_cdev_register(struct simhca_dev *sdev);
void simhca_cdev_unregister(struct simhca_dev *sdev);
void simhca_relay_init(struct simhca_dev *sdev);
void simhca_relay_queue(struct simhca_dev *sdev, const struct simhca_msg *msg);

#endif /* SIMHCA_H */
