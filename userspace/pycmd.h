/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The analysis commands: handed to the Python package. */
#ifndef HS_PYCMD_H
#define HS_PYCMD_H

/* Runs `python -m hopscope argv[1..]`; returns only on failure (exit status). */
int hs_exec_python(int argc, char **argv);

#endif
