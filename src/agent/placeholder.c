/* agent.c - placeholder so the library has a member. */
int agent_placeholder_(void);
int agent_placeholder_(void) { return 0; }
