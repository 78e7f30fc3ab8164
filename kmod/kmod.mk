# Kernel module targets, included by the top Makefile.
#   make kmod [KDIR=DIR]   build kmod/hopscope.ko against kernel headers (default:
#                          Debian's 6.12 headers, see scripts/install-deps.sh)
#   make kmod-test         build against the 6.1 and 6.12 headers and test each in
#                          QEMU (testbed/qemu/run.sh); KMOD_SERIES=6.12 for one
#   make kmod-clean        remove the module's build products
KMOD_HEADERS := $(filter-out %-cloud-amd64 %-rt-amd64,$(wildcard /usr/src/linux-headers-6.12*-amd64))
KDIR ?= $(lastword $(sort $(KMOD_HEADERS)))
KMOD_SERIES ?= 6.1 6.12

.PHONY: kmod kmod-test kmod-clean
kmod:
	$(Q)test -f "$(KDIR)/Makefile" || { echo "make kmod: no kernel headers at '$(KDIR)': run 'make deps' or pass KDIR=/path/to/headers" >&2; exit 1; }
	$(call msg,KMOD,kmod/hopscope.ko for $(notdir $(KDIR)))
	$(Q)$(MAKE) -C "$(KDIR)" M="$(CURDIR)/kmod" $(if $(filter 1,$(V)),V=1,-s) modules

# the guest also runs build/hopscope (both backends side by side on 6.12)
kmod-test: all
	$(Q)./testbed/qemu/run.sh $(KMOD_SERIES)

kmod-clean:
	$(Q)rm -f kmod/*.o kmod/*.ko kmod/*.mod kmod/*.mod.c kmod/.*.cmd kmod/Module.symvers kmod/modules.order

clean: kmod-clean
