/*
 * Stand-in for drivers/infiniband/core/sa.h: the declarations the series adds
 * there for sa_redirect.c (kept equal to the patch's), and what sa.h brings in
 * through <rdma/ib_sa.h> and <rdma/ib_verbs.h>.
 */
#ifndef SHIM_SA_H
#define SHIM_SA_H
#include <linux/kernel.h>

#define IB_DEVICE_NAME_MAX		64
#define IB_SA_METHOD_GET_TABLE		0x12
#define IB_SA_METHOD_GET_TRACE_TBL	0x13
#define IB_SA_METHOD_GET_MULTI		0x14
#define IB_SA_METHOD_DELETE		0x15

enum ib_sa_redirect_kind {
	IB_SA_REDIRECT_OFF,
	IB_SA_REDIRECT_LID,
	IB_SA_REDIRECT_SELF,
};

enum ib_sa_redirect_outcome {
	IB_SA_REDIRECT_ANSWERED,
	IB_SA_REDIRECT_REFUSED,
	IB_SA_REDIRECT_TIMED_OUT,
	IB_SA_REDIRECT_SEND_FAILED,
	IB_SA_REDIRECT_HUNG,
	IB_SA_REDIRECT_PARKED,
};

enum ib_sa_redirect_probe_result {
	IB_SA_REDIRECT_PROBE_ALIVE,
	IB_SA_REDIRECT_PROBE_GONE,
	IB_SA_REDIRECT_PROBE_UNKNOWN,
};

/* <rdma/ib_verbs.h>: the completion statuses a query's end is told with */
enum ib_wc_status {
	IB_WC_SUCCESS,
	IB_WC_LOC_LEN_ERR,
	IB_WC_LOC_QP_OP_ERR,
	IB_WC_LOC_EEC_OP_ERR,
	IB_WC_LOC_PROT_ERR,
	IB_WC_WR_FLUSH_ERR,
	IB_WC_RESP_TIMEOUT_ERR = 15,
	IB_WC_GENERAL_ERR = 21,
};

/* from the 6.12 series' KUnit patch on, the table's types are in sa.h */
#ifdef SHIM_SA_H_REDIRECT_TYPES
#define IB_SA_REDIRECT_MAX_ENTRIES	16

struct ib_sa_redirect_entry {
	char dev[IB_DEVICE_NAME_MAX];
	u32 port;
	u16 lid;
};

struct ib_sa_redirect_table {
	unsigned int num;
	struct ib_sa_redirect_entry entry[IB_SA_REDIRECT_MAX_ENTRIES];
};

struct ib_sa_redirect_span {
	const char *s;
	int len;
};
#endif

enum ib_sa_redirect_kind ib_sa_redirect_lookup(const char *dev, u32 port, u16 *lid);
unsigned int ib_sa_redirect_timeout_ms(void);
unsigned int ib_sa_redirect_probe_ms(void);
unsigned int ib_sa_redirect_probe_timeout_ms(void);
bool ib_sa_redirect_is_get(u8 method);
bool ib_sa_redirect_refused(__be16 status);
bool ib_sa_redirect_not_processed(u8 method, int retries, __be16 status);
bool ib_sa_redirect_may_resend(u8 method, enum ib_sa_redirect_outcome outcome);
bool ib_sa_redirect_to_sm(u8 method, enum ib_sa_redirect_outcome outcome,
			  bool cancelled, bool sm_valid, enum ib_wc_status *status);
bool ib_sa_redirect_doubts(enum ib_sa_redirect_outcome outcome);
bool ib_sa_redirect_stalled(unsigned long now, unsigned long sent,
			    unsigned long heard, unsigned long wait,
			    unsigned long *next);
enum ib_sa_redirect_probe_result
ib_sa_redirect_probe_result(bool answered, int status, __be16 mad_status,
			    bool heard);
void ib_sa_redirect_start(void);
void ib_sa_redirect_changed(void);
#endif
