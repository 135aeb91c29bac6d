/*
 * User-space test of ib_core.sa_redirect: the parser and the rules for
 * redirected queries in the sa_redirect.c that kernel/patches/<line>/ adds,
 * extracted from the patch at build time and compiled against the
 * stand-ins in shim/ (its functions are static: the file is included).
 */
#include "sa_redirect.c"

char shim_last_warning[512];
int shim_warnings;
static int changed_calls;

/* the two numeric parameters, through their kernel_param */
#define TIMEOUT_MS (*(unsigned int *)shim_kp_sa_redirect_timeout_ms.arg)
#define PROBE_MS (*(unsigned int *)shim_kp_sa_redirect_probe_ms.arg)
static int passed, failed;

void ib_sa_redirect_changed(void)
{
	changed_calls++;
}

#define CHECK(cond, ...)                                          \
	do {                                                      \
		if (cond) {                                       \
			passed++;                                 \
		} else {                                          \
			failed++;                                 \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__);                      \
			printf("\n");                             \
		}                                                 \
	} while (0)

/* parse @in and print it back; NULL if it does not parse */
static const char *roundtrip(const char *in)
{
	static char out[PAGE_SIZE];
	struct ib_sa_redirect_table t;
	struct ib_sa_redirect_span bad;
	const char *why;

	if (ib_sa_redirect_parse(in, &t, &bad, &why))
		return NULL;
	ib_sa_redirect_format(&t, out, sizeof(out));
	return out;
}

static void good(const char *in, const char *want)
{
	const char *got = roundtrip(in);

	CHECK(got && !strcmp(got, want), "\"%s\" -> \"%s\", want \"%s\"", in,
	      got ? got : "(rejected)", want);
	/* the read-out parses back to itself */
	if (got) {
		char again[PAGE_SIZE];

		snprintf(again, sizeof(again), "%s", got);
		got = roundtrip(again);
		CHECK(got && !strcmp(got, want), "read-out \"%s\" does not round-trip", want);
	}
}

static void bad(const char *in, const char *entry)
{
	struct ib_sa_redirect_table t;
	struct ib_sa_redirect_span b = { "", 0 };
	const char *why = NULL;
	int ret = ib_sa_redirect_parse(in, &t, &b, &why);

	CHECK(ret == -EINVAL, "\"%s\" accepted", in);
	if (ret == -EINVAL && entry)
		CHECK((int)strlen(entry) == b.len && !strncmp(entry, b.s, b.len) && why,
		      "\"%s\": blamed \"%.*s\", want \"%s\"", in, b.len, b.s, entry);
}

static void test_parse(void)
{
	char buf[2048], name[80];
	int i;

	good("", "");
	good(" \n", "");
	good("*:*=self", "*:*=self");
	good("*:*=self\n", "*:*=self");
	good("mlx5_0:1=0x12,mlx5_0:2=18,*:*=self",
	     "mlx5_0:1=0x12,mlx5_0:2=0x12,*:*=self");
	good("  mlx4_0 : 1 = 7 , * : 2 = self ", "mlx4_0:1=0x7,*:2=self");
	good("*:*=1", "*:*=0x1");
	good("*:*=0xbfff", "*:*=0xbfff");
	good("*:*=0XBFFF", "*:*=0xbfff");
	good("*:*=49151", "*:*=0xbfff");
	good("*:*=010", "*:*=0xa");		/* decimal, not octal */
	good("hfi1_0:255=0x1", "hfi1_0:255=0x1");
	good("ib:dev:1=5", "ib:dev:1=0x5");	/* the last ':' splits */

	bad("mlx5_0:1", "mlx5_0:1");
	bad("mlx5_0=5", "mlx5_0=5");
	bad("mlx5_0:0=5", "mlx5_0:0=5");
	bad("mlx5_0:x=5", "mlx5_0:x=5");
	bad("mlx5_0:-1=5", "mlx5_0:-1=5");
	bad("mlx5_0:=5", "mlx5_0:=5");
	bad("*:*=0", "*:*=0");
	bad("*:*=0x0", "*:*=0x0");
	bad("*:*=0xc000", "*:*=0xc000");	/* multicast */
	bad("*:*=49152", "*:*=49152");
	bad("*:*=0xffff", "*:*=0xffff");	/* permissive */
	bad("*:*=65536", "*:*=65536");
	bad("*:*=4294967296", "*:*=4294967296");
	bad("*:*=-1", "*:*=-1");
	bad("*:*=+5", "*:*=+5");
	bad("*:*=0x", "*:*=0x");
	bad("*:*=1 2", "*:*=1 2");
	bad("*:*=", "*:*=");
	bad("*:*=selfish", "*:*=selfish");
	bad("*:*=SELF", "*:*=SELF");
	bad(":1=5", ":1=5");
	bad("a b:1=5", "a b:1=5");
	bad("mlx*:1=5", "mlx*:1=5");
	bad("*:*=self,mlx5_0:1=0x10000", "mlx5_0:1=0x10000");
	bad("a:1=1,,b:1=2", "");
	bad("a:1=1,", "");
	bad(",a:1=1", "");
	bad("*:*=self,*:*=5", "*:*=5");		/* duplicate */
	bad("a:1=1,a:1=2", "a:1=2");

	/* device names: up to 63 characters */
	memset(name, 'd', 63);
	name[63] = '\0';
	snprintf(buf, sizeof(buf), "%s:1=5", name);
	CHECK(roundtrip(buf) != NULL, "63-character device name rejected");
	snprintf(buf, sizeof(buf), "%sd:1=5", name);
	bad(buf, buf);

	/* at most IB_SA_REDIRECT_MAX_ENTRIES entries */
	buf[0] = '\0';
	for (i = 1; i <= IB_SA_REDIRECT_MAX_ENTRIES; i++)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%sd:%d=%d",
			 i > 1 ? "," : "", i, i);
	CHECK(roundtrip(buf) != NULL, "%d entries rejected", IB_SA_REDIRECT_MAX_ENTRIES);
	strcat(buf, ",d:99=99");
	bad(buf, "d:99=99");
}

static void test_match(void)
{
	struct ib_sa_redirect_table t;
	struct ib_sa_redirect_span b;
	const char *why;

	CHECK(!ib_sa_redirect_parse("*:*=1,mlx5_0:*=2,*:2=3,mlx5_0:2=4,mlx4_0:3=self",
				 &t, &b, &why), "match table rejected");
	CHECK(ib_sa_redirect_match(&t, "mlx5_0", 2)->lid == 4, "dev:port beats all");
	CHECK(ib_sa_redirect_match(&t, "mlx5_0", 1)->lid == 2, "dev:* beats *:port");
	CHECK(ib_sa_redirect_match(&t, "mlx4_0", 2)->lid == 3, "*:port beats *:*");
	CHECK(ib_sa_redirect_match(&t, "mlx4_0", 1)->lid == 1, "*:* matches the rest");
	CHECK(ib_sa_redirect_match(&t, "mlx4_0", 3)->lid == 0, "self entry");

	CHECK(!ib_sa_redirect_parse("mlx5_0:1=0x20", &t, &b, &why), "rejected");
	CHECK(!ib_sa_redirect_match(&t, "mlx5_0", 2), "other port matched");
	CHECK(!ib_sa_redirect_match(&t, "mlx5_01", 1), "other device matched");
	CHECK(!ib_sa_redirect_match(&t, "mlx5", 1), "prefix matched");
	CHECK(ib_sa_redirect_match(&t, "mlx5_0", 1)->lid == 0x20, "exact entry");
}

/* the parameter as sysfs and modprobe drive it */
static const char *param_get(void)
{
	static char page[PAGE_SIZE];
	int len = shim_param_sa_redirect->get(page, NULL);

	page[len] = '\0';
	return page;
}

static u16 lookup(const char *dev, u32 port)
{
	u16 lid = 0;

	switch (ib_sa_redirect_lookup(dev, port, &lid)) {
	case IB_SA_REDIRECT_LID:
		return lid;
	case IB_SA_REDIRECT_SELF:
		return 0xffff;	/* stands for "self" here */
	default:
		return 0;
	}
}

static void test_param(void)
{
	int calls, warnings;

	/* load time (before ib_sa runs): a bad value is logged, not refused */
	warnings = shim_warnings;
	CHECK(shim_param_sa_redirect->set("*:*=0xc000\n", NULL) == 0,
	      "a bad value at load time fails the load of ib_core");
	CHECK(!strcmp(param_get(), "\n"), "bad load-time value left a table: \"%s\"",
	      param_get());
	CHECK(shim_warnings == warnings + 1 && strstr(shim_last_warning, "redirect off"),
	      "bad load-time value not logged: %s", shim_last_warning);
	CHECK(shim_param_sa_redirect->set("*:*=self", NULL) == 0, "load-time value");
	CHECK(changed_calls == 0, "address handles rebuilt before ib_sa runs");
	CHECK(shim_param_sa_redirect->set("mlx5_0:1=1,x", NULL) == 0 &&
	      !strcmp(param_get(), "\n"), "a bad load-time value keeps the table empty");

	/* a bad number at load time: logged, the default kept, no failed load */
	warnings = shim_warnings;
	CHECK(shim_param_sa_redirect_timeout_ms->set("abc",
		&shim_kp_sa_redirect_timeout_ms) == 0,
	      "a bad sa_redirect_timeout_ms at load time fails the load");
	CHECK(TIMEOUT_MS == 200, "bad timeout at load changed it: %u", TIMEOUT_MS);
	CHECK(shim_warnings == warnings + 1 &&
	      strstr(shim_last_warning, "sa_redirect_timeout_ms: invalid value \"abc\", keeping 200"),
	      "bad timeout at load not logged: %s", shim_last_warning);
	CHECK(shim_param_sa_redirect_probe_ms->set("200ms",
		&shim_kp_sa_redirect_probe_ms) == 0 && PROBE_MS == 5000,
	      "a bad sa_redirect_probe_ms at load: %u", PROBE_MS);
	CHECK(shim_param_sa_redirect_probe_ms->set(NULL,
		&shim_kp_sa_redirect_probe_ms) == 0 && PROBE_MS == 5000,
	      "sa_redirect_probe_ms without a value at load: %u", PROBE_MS);
	CHECK(shim_param_sa_redirect_probe_ms->flags & KERNEL_PARAM_OPS_FL_NOARG,
	      "without FL_NOARG a value-less parameter fails the load");
	ib_sa_redirect_start();
	CHECK(shim_param_sa_redirect_timeout_ms->set("abc",
		&shim_kp_sa_redirect_timeout_ms) == -EINVAL && TIMEOUT_MS == 200,
	      "a bad run-time write of sa_redirect_timeout_ms is not refused");
	CHECK(shim_param_sa_redirect_timeout_ms->set("300\n",
		&shim_kp_sa_redirect_timeout_ms) == 0 && TIMEOUT_MS == 300,
	      "a good write of sa_redirect_timeout_ms: %u", TIMEOUT_MS);
	TIMEOUT_MS = 200;

	CHECK(!strcmp(param_get(), "\n"), "initial table not empty: \"%s\"", param_get());
	CHECK(TIMEOUT_MS == 200, "timeout default %u",
	      TIMEOUT_MS);
	CHECK(PROBE_MS == 5000, "probe default %u",
	      PROBE_MS);
	CHECK(ib_sa_redirect_timeout_ms() == 200 && ib_sa_redirect_probe_ms() == 5000,
	      "getters");

	calls = changed_calls;
	CHECK(shim_param_sa_redirect->set("mlx5_0:1=0x12,*:*=self\n", NULL) == 0,
	      "good write rejected");
	CHECK(!strcmp(param_get(), "mlx5_0:1=0x12,*:*=self\n"), "read-out \"%s\"",
	      param_get());
	CHECK(changed_calls == calls + 1, "address handles not rebuilt");
	CHECK(lookup("mlx5_0", 1) == 0x12, "lookup LID");
	CHECK(lookup("mlx5_0", 2) == 0xffff, "lookup self");

	calls = changed_calls;
	warnings = shim_warnings;
	CHECK(shim_param_sa_redirect->set("*:*=self,mlx5_0:1=0xc000\n", NULL) == -EINVAL,
	      "bad write accepted");
	CHECK(!strcmp(param_get(), "mlx5_0:1=0x12,*:*=self\n"),
	      "bad write changed the table: \"%s\"", param_get());
	CHECK(changed_calls == calls, "bad write rebuilt address handles");
	CHECK(shim_warnings == warnings + 1, "%d warnings", shim_warnings - warnings);
	CHECK(strstr(shim_last_warning, "\"mlx5_0:1=0xc000\""),
	      "warning does not name the entry: %s", shim_last_warning);
	CHECK(strstr(shim_last_warning, "table unchanged"), "warning: %s",
	      shim_last_warning);
	CHECK(!strncmp(shim_last_warning, "ib_sa: ", 7), "no pr_fmt prefix: %s",
	      shim_last_warning);

	CHECK(shim_param_sa_redirect->set("", NULL) == 0, "clearing rejected");
	CHECK(!strcmp(param_get(), "\n"), "not cleared: \"%s\"", param_get());
	CHECK(lookup("mlx5_0", 1) == 0, "still redirected");

	TIMEOUT_MS = 0;
	PROBE_MS = 0;
	CHECK(ib_sa_redirect_timeout_ms() == 1, "timeout 0 not clamped");
	CHECK(ib_sa_redirect_probe_ms() == 100, "probe 0 not clamped");
	CHECK(ib_sa_redirect_mutex.held == 0, "mutex left held");
}

/* which answers are refusals: the whole status, no mask */
static void test_refused(void)
{
	static const struct {
		u16 status;
		bool refused;
	} cases[] = {
		{ 0x0000, false },	/* success */
		{ 0x0004, true },	/* bad version */
		{ 0x0008, true },	/* unsupported method */
		{ 0x000c, true },	/* unsupported method/attribute */
		{ 0x001c, false },	/* invalid attribute value: an SA's answer */
		{ 0x0014, false },	/* reserved invalid-field code */
		{ 0x0001, false },	/* busy */
		{ 0x0005, false },	/* busy + bad version: an SA's answer */
		{ 0x000d, false },	/* busy + unsupported method/attribute */
		{ 0x000e, false },	/* redirect + unsupported method/attribute */
		{ 0x010c, false },	/* SA class code + 0x0c */
		{ 0x0300, false },	/* ERR_NO_RECORDS */
		{ 0x0108, false },	/* ERR_NO_RESOURCES with 0x08 */
		{ 0x0408, false },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++)
		CHECK(ib_sa_redirect_refused(cpu_to_be16(cases[i].status)) ==
		      cases[i].refused, "status 0x%04x taken %s a refusal",
		      cases[i].status, cases[i].refused ? "for no" : "for");
}

/* which redirected requests may go to the SM, after what */
static void test_resend(void)
{
	/* ib_sa sends Get, Set and Delete; only a Get is asked again */
	static const u8 gets[] = { 0x01 };
	static const u8 others[] = { 0x02, 0x15 };
	static const u8 unsent[] = { 0x12, 0x13, 0x14 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(gets); i++) {
		CHECK(ib_sa_redirect_is_get(gets[i]), "0x%02x is a Get", gets[i]);
		CHECK(ib_sa_redirect_may_resend(gets[i], IB_SA_REDIRECT_TIMED_OUT),
		      "Get 0x%02x not resent after a timeout", gets[i]);
		CHECK(ib_sa_redirect_may_resend(gets[i], IB_SA_REDIRECT_REFUSED),
		      "Get 0x%02x not resent after a refusal", gets[i]);
		CHECK(!ib_sa_redirect_may_resend(gets[i], IB_SA_REDIRECT_ANSWERED),
		      "answered Get 0x%02x resent", gets[i]);
	}
	for (i = 0; i < ARRAY_SIZE(others); i++) {
		CHECK(!ib_sa_redirect_is_get(others[i]), "0x%02x is a Get", others[i]);
		/* the target may have acted on it, or relayed it to the SM */
		CHECK(!ib_sa_redirect_may_resend(others[i], IB_SA_REDIRECT_TIMED_OUT),
		      "method 0x%02x resent after a timeout", others[i]);
		/* a refused request was not processed: safe to send again */
		CHECK(ib_sa_redirect_may_resend(others[i], IB_SA_REDIRECT_REFUSED),
		      "method 0x%02x not resent after a refusal", others[i]);
		CHECK(ib_sa_redirect_may_resend(others[i], IB_SA_REDIRECT_SEND_FAILED),
		      "method 0x%02x not resent after a failed send", others[i]);
		CHECK(!ib_sa_redirect_may_resend(others[i], IB_SA_REDIRECT_ANSWERED),
		      "answered method 0x%02x resent", others[i]);
	}
	/* no code for methods ib_sa never sends (GetTable, GetTraceTable, GetMulti) */
	for (i = 0; i < ARRAY_SIZE(unsent); i++)
		CHECK(!ib_sa_redirect_is_get(unsent[i]),
		      "0x%02x, never sent by ib_sa, taken for a Get", unsent[i]);
}

/*
 * Whether a query goes to the SM, and what its caller is told if not: -EINTR
 * when cancelled or the port goes away, whatever the outcome (a refused query
 * blocked by the removal got -EIO); never a fallback to an SM without a
 * unicast LID (one built after a port event, DLID 0)
 */
static void test_to_sm(void)
{
	enum ib_wc_status st = IB_WC_SUCCESS;

	CHECK(ib_sa_redirect_to_sm(0x02, IB_SA_REDIRECT_REFUSED, false, true, &st),
	      "a refused Set not sent to the SM");
	CHECK(ib_sa_redirect_to_sm(0x01, IB_SA_REDIRECT_TIMED_OUT, false, true, &st),
	      "a timed out Get not sent to the SM");
	CHECK(ib_sa_redirect_to_sm(0x15, IB_SA_REDIRECT_HUNG, false, true, &st),
	      "a Delete to a hung target not sent to the SM");
	st = IB_WC_SUCCESS;
	CHECK(!ib_sa_redirect_to_sm(0x02, IB_SA_REDIRECT_REFUSED, true, true, &st) &&
	      st == IB_WC_WR_FLUSH_ERR, "refused, port going away: status %d, not -EINTR", st);
	st = IB_WC_SUCCESS;
	CHECK(!ib_sa_redirect_to_sm(0x01, IB_SA_REDIRECT_TIMED_OUT, true, true, &st) &&
	      st == IB_WC_WR_FLUSH_ERR, "cancelled Get: status %d", st);
	st = IB_WC_SUCCESS;
	CHECK(!ib_sa_redirect_to_sm(0x01, IB_SA_REDIRECT_TIMED_OUT, false, false, &st) &&
	      st == IB_WC_RESP_TIMEOUT_ERR, "Get, no valid SM: status %d", st);
	st = IB_WC_SUCCESS;
	CHECK(!ib_sa_redirect_to_sm(0x02, IB_SA_REDIRECT_HUNG, false, false, &st) &&
	      st == IB_WC_RESP_TIMEOUT_ERR, "Set to a hung target, no valid SM: status %d", st);
	st = IB_WC_SUCCESS;
	CHECK(!ib_sa_redirect_to_sm(0x01, IB_SA_REDIRECT_REFUSED, false, false, &st) &&
	      st == IB_WC_GENERAL_ERR, "refused Get, no valid SM: status %d", st);
	st = IB_WC_SUCCESS;
	CHECK(!ib_sa_redirect_to_sm(0x02, IB_SA_REDIRECT_TIMED_OUT, false, true, &st) &&
	      st == IB_WC_RESP_TIMEOUT_ERR, "timed out Set at a live target: status %d", st);
}

/* a failed send never reached the target: no reason to probe it */
static void test_doubts(void)
{
	CHECK(ib_sa_redirect_doubts(IB_SA_REDIRECT_REFUSED), "a refusal not doubted");
	CHECK(ib_sa_redirect_doubts(IB_SA_REDIRECT_TIMED_OUT), "a timeout not doubted");
	CHECK(!ib_sa_redirect_doubts(IB_SA_REDIRECT_SEND_FAILED),
	      "a target never contacted is probed");
	CHECK(!ib_sa_redirect_doubts(IB_SA_REDIRECT_ANSWERED), "an answer doubted");
}

/* a probe flushed by the removal of the port, or not sent, says nothing */
static void test_probe_result(void)
{
	CHECK(ib_sa_redirect_probe_result(true, 0, 0, false) == IB_SA_REDIRECT_PROBE_ALIVE,
	      "an answered probe");
	CHECK(ib_sa_redirect_probe_result(true, -EINVAL, cpu_to_be16(0x0300), false) ==
	      IB_SA_REDIRECT_PROBE_ALIVE, "an SA's error answer");
	CHECK(ib_sa_redirect_probe_result(true, -EINVAL, cpu_to_be16(0x000c), true) ==
	      IB_SA_REDIRECT_PROBE_GONE, "a refused probe");
	CHECK(ib_sa_redirect_probe_result(false, -ETIMEDOUT, 0, false) ==
	      IB_SA_REDIRECT_PROBE_GONE, "a probe that timed out");
	CHECK(ib_sa_redirect_probe_result(false, -EINTR, 0, true) ==
	      IB_SA_REDIRECT_PROBE_UNKNOWN, "a flushed probe taken for a verdict");
	CHECK(ib_sa_redirect_probe_result(false, -EIO, 0, false) ==
	      IB_SA_REDIRECT_PROBE_UNKNOWN, "a probe whose send failed taken for a verdict");
	/* the target answered other queries meanwhile: busy, not hung */
	CHECK(ib_sa_redirect_probe_result(false, -ETIMEDOUT, 0, true) ==
	      IB_SA_REDIRECT_PROBE_ALIVE, "a busy target taken for gone");
}

/* Gets waiting at a target make the port probe it only when it answers nothing */
static void test_stalled(void)
{
	const unsigned long wait = 5, sent = 1000;
	unsigned long next = 0;

	CHECK(!ib_sa_redirect_stalled(sent + 4, sent, sent, wait, &next) &&
	      next == sent + wait, "a Get probed before it waited R");
	CHECK(!ib_sa_redirect_stalled(sent + 7, sent, sent + 3, wait, &next) &&
	      next == sent + 3 + wait, "a backlog that is answered probed");
	CHECK(!ib_sa_redirect_stalled(sent + 50, sent, sent + 49, wait, &next),
	      "a long backlog that is answered probed");
	CHECK(ib_sa_redirect_stalled(sent + 5, sent, sent - 1, wait, &next) &&
	      next == sent + 5 + wait, "a silent target not probed");
	CHECK(ib_sa_redirect_stalled(sent + 9, sent, sent + 3, wait, &next),
	      "a target silent for R not probed");
	CHECK(!ib_sa_redirect_stalled(2, ULONG_MAX - 1, ULONG_MAX - 1, wait, &next),
	      "the wrap of jiffies");
	CHECK(ib_sa_redirect_stalled(4, ULONG_MAX - 1, ULONG_MAX - 5, wait, &next),
	      "the wrap of jiffies (silent)");
}

/* a refusal proves "not processed" only for a try that was not retried */
static void test_not_processed(void)
{
	__be16 refusal = cpu_to_be16(0x000c);

	CHECK(ib_sa_redirect_not_processed(IB_MGMT_METHOD_SET, 0, refusal),
	      "a Set refused on its first try was processed");
	/* the first try may have been relayed by a local SA that then died */
	CHECK(!ib_sa_redirect_not_processed(IB_MGMT_METHOD_SET, 1, refusal),
	      "a Set refused after a retry counts as not processed");
	CHECK(!ib_sa_redirect_not_processed(0x15, 3, refusal),
	      "a Delete refused after retries counts as not processed");
	CHECK(ib_sa_redirect_not_processed(IB_MGMT_METHOD_GET, 2, refusal),
	      "a Get refused after a retry is not asked of the SM");
	CHECK(!ib_sa_redirect_not_processed(IB_MGMT_METHOD_GET, 0,
					    cpu_to_be16(0x001c)),
	      "an SA's own error counts as a refusal");
}

/* a target that answered neither the request nor a probe after it hangs */
static void test_hung(void)
{
	static const u8 methods[] = { 0x01, 0x02, 0x15, 0x12 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(methods); i++)
		CHECK(ib_sa_redirect_may_resend(methods[i], IB_SA_REDIRECT_HUNG),
		      "method 0x%02x not sent to the SM when the target hangs",
		      methods[i]);
}

int main(void)
{
	test_parse();
	test_match();
	test_param();
	test_refused();
	test_resend();
	test_not_processed();
	test_hung();
	test_to_sm();
	test_doubts();
	test_probe_result();
	test_stalled();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
