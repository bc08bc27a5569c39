/* main.c - suanli-agent (placeholder until the agent lands). */
#include <stdio.h>

int main(void)
{
	fprintf(stderr, "suanli-agent: not built yet\n");
	return 2;
}
