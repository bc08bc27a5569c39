/* test_instance_sm.c - the instance state machine (instance_sm.h): the
 * transitions the product promises (stop keeps the instance, start comes
 * back, release ends it for good, a failed start may start again) and the
 * ones it must refuse, and how the nodes' reports add up to one event. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "instance_sm.h"

static enum inst_state go(enum inst_state s, enum inst_event e)
{
	enum inst_state to = IS__COUNT;
	if (!inst_sm_next(s, e, &to))
		fail_msg("%s --%s--> refused", inst_state_name(s), inst_event_name(e));
	return to;
}

static void test_life(void **state)
{
	(void)state;
	enum inst_state s = IS_STARTING;
	s = go(s, IE_RUNNING);
	assert_int_equal(s, IS_RUNNING);
	s = go(go(s, IE_STOP), IE_STOPPED);
	assert_int_equal(s, IS_STOPPED);
	s = go(s, IE_WAIT);
	assert_int_equal(s, IS_WAITING);
	s = go(s, IE_PLACED);
	assert_int_equal(s, IS_STARTING);
	s = go(s, IE_FAIL);
	assert_int_equal(s, IS_FAILED);
	s = go(s, IE_PLACED); /* a failed start may start again: nothing was lost */
	assert_int_equal(s, IS_STARTING);
	s = go(go(s, IE_RELEASE), IE_REMOVED);
	assert_int_equal(s, IS_RELEASED);
	assert_int_equal(go(IS_WAITING, IE_STOP), IS_STOPPED); /* nothing ran */
}

static void test_refused(void **state)
{
	(void)state;
	enum inst_state to = IS_RUNNING;
	/* released is final; releasing only ends in released */
	for (int e = 0; e < IE__COUNT; e++) {
		assert_false(inst_sm_next(IS_RELEASED, (enum inst_event)e, &to));
		if (e != IE_REMOVED)
			assert_false(inst_sm_next(IS_RELEASING, (enum inst_event)e, &to));
	}
	assert_false(inst_sm_next(IS_RUNNING, IE_PLACED, &to));  /* no second placement */
	assert_false(inst_sm_next(IS_STOPPED, IE_RUNNING, &to)); /* a late report */
	assert_false(inst_sm_next(IS_STOPPED, IE_STOP, &to));
	assert_false(inst_sm_next(IS_STOPPING, IE_PLACED, &to)); /* start waits for the stop */
	assert_int_equal(to, IS_RUNNING);                        /* untouched by refusals */
	assert_false(inst_sm_next(IS__COUNT, IE_STOP, &to));
	assert_false(inst_sm_next(IS_RUNNING, IE__COUNT, &to));
	/* every state but released may be released */
	for (int s = 0; s < IS__COUNT; s++)
		if (s != IS_RELEASED && s != IS_RELEASING)
			assert_int_equal(go((enum inst_state)s, IE_RELEASE), IS_RELEASING);
}

static void test_names(void **state)
{
	(void)state;
	for (int s = 0; s < IS__COUNT; s++)
		assert_int_equal(inst_state_parse(inst_state_name((enum inst_state)s)), s);
	assert_int_equal(inst_state_parse("Running"), -1);
	assert_int_equal(inst_report_parse("pulling"), IR_BUSY);
	assert_int_equal(inst_report_parse("exported"), IR_EXPORTED);
	assert_int_equal(inst_report_parse("bogus"), IR_NONE);
	assert_int_equal(inst_report_parse(NULL), IR_NONE);
}

static void test_reports(void **state)
{
	(void)state;
	enum inst_report two_run[] = {IR_RUNNING, IR_RUNNING};
	enum inst_report one_pull[] = {IR_RUNNING, IR_BUSY};
	enum inst_report one_fail[] = {IR_RUNNING, IR_FAILED};
	enum inst_report one_stop[] = {IR_RUNNING, IR_STOPPED};
	enum inst_report both_stop[] = {IR_STOPPED, IR_FAILED};
	enum inst_report removed[] = {IR_REMOVED, IR_REMOVED};
	enum inst_report half_removed[] = {IR_REMOVED, IR_STOPPED};
	/* running only when every node runs it: a pull is never billed */
	assert_int_equal(inst_sm_from_reports(IS_STARTING, two_run, 2), IE_RUNNING);
	assert_int_equal(inst_sm_from_reports(IS_STARTING, one_pull, 2), IE__COUNT);
	assert_int_equal(inst_sm_from_reports(IS_STARTING, one_fail, 2), IE_FAIL);
	/* a container that ends by itself (the guest) stops the instance */
	assert_int_equal(inst_sm_from_reports(IS_RUNNING, one_stop, 2), IE_STOP);
	assert_int_equal(inst_sm_from_reports(IS_RUNNING, two_run, 2), IE__COUNT);
	assert_int_equal(inst_sm_from_reports(IS_STOPPING, one_stop, 2), IE__COUNT);
	assert_int_equal(inst_sm_from_reports(IS_STOPPING, both_stop, 2), IE_STOPPED);
	assert_int_equal(inst_sm_from_reports(IS_RELEASING, half_removed, 2), IE__COUNT);
	assert_int_equal(inst_sm_from_reports(IS_RELEASING, removed, 2), IE_REMOVED);
	assert_int_equal(inst_sm_from_reports(IS_STOPPED, two_run, 2), IE__COUNT);
	assert_int_equal(inst_sm_from_reports(IS_STARTING, two_run, 0), IE__COUNT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_life),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_reports),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
