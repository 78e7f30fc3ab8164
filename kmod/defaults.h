/* SPDX-License-Identifier: GPL-2.0 */
/* Kconfig values, with the same defaults when built out of tree (no Kconfig there). */
#ifndef HS_DEFAULTS_H
#define HS_DEFAULTS_H

#ifndef CONFIG_HOPSCOPE_SLOTS_PER_CPU
#define CONFIG_HOPSCOPE_SLOTS_PER_CPU 4096
#endif
#ifndef CONFIG_HOPSCOPE_RING_RECORDS
#define CONFIG_HOPSCOPE_RING_RECORDS 65536
#endif

#endif
