/* inst_migrate.c - moving an instance's disks to another node through the
 * controller (contract instances.md, "Migration disks"). */
#include <stdio.h>

#include "inst_int.h"

int inst_export_main(struct inst_sup *s, struct inst *in, int errfd)
{
	(void)s;
	dprintf(errfd, "suanli-agent: instance %s: export is not implemented yet\n", in->spec.id);
	return 1;
}

int inst_import_main(struct inst_sup *s, struct inst *in, int errfd)
{
	(void)s;
	dprintf(errfd, "suanli-agent: instance %s: import is not implemented yet\n", in->spec.id);
	return 1;
}
