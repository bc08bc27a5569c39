/* test_agent_backoff.c - the agents' retry waits (agent_backoff_next):
 * within the bounds, spread out (jitter), growing, capped, and never below a
 * Retry-After the controller sent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent.h"

static void test_bounds_growth_and_cap(void **state)
{
	(void)state;
	uint64_t rng = 12345;
	int64_t prev = 0, grew = 0;
	for (int i = 0; i < 200; i++) {
		int64_t b = agent_backoff_next(prev, 0, &rng);
		assert_true(b >= AGENT_RETRY_MIN_NS);
		assert_true(b <= AGENT_RETRY_MAX_NS);
		assert_true(b <= (prev ? prev * 3 : AGENT_RETRY_MIN_NS * 3));
		if (b > grew)
			grew = b;
		prev = b;
	}
	/* a long series reaches the cap's neighbourhood */
	assert_true(grew > AGENT_RETRY_MAX_NS / 2);
}

static void test_jitter_spreads_a_crowd(void **state)
{
	(void)state;
	/* 100 agents refused together, each with its own seed: their first
	 * waits differ, so they do not come back in one burst */
	int64_t lo = INT64_MAX, hi = 0;
	for (uint64_t seed = 1; seed <= 100; seed++) {
		uint64_t rng = seed * 0x9e3779b97f4a7c15ull;
		int64_t b = agent_backoff_next(0, 0, &rng);
		lo = b < lo ? b : lo;
		hi = b > hi ? b : hi;
	}
	assert_true(hi - lo > AGENT_RETRY_MIN_NS); /* spread over more than a second */
}

static void test_retry_after_is_a_floor(void **state)
{
	(void)state;
	uint64_t rng = 7;
	for (int i = 0; i < 100; i++) {
		int64_t b = agent_backoff_next(0, 5 * AGENT_RETRY_MIN_NS, &rng);
		assert_true(b >= 5 * AGENT_RETRY_MIN_NS);
		assert_true(b <= 10 * AGENT_RETRY_MIN_NS);
	}
	/* an absurd Retry-After is capped */
	assert_true(agent_backoff_next(0, 3600LL * AGENT_RETRY_MIN_NS, &rng) <= AGENT_RETRY_MAX_NS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bounds_growth_and_cap),
		cmocka_unit_test(test_jitter_spreads_a_crowd),
		cmocka_unit_test(test_retry_after_is_a_floor),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
