/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef HS_RECORD_H
#define HS_RECORD_H

int hs_cmd_record(int argc, char **argv);

#endif
