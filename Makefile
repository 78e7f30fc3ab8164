# hopscope: `make` builds, `make test` runs every test, `make demo` shows it working.
# Quiet by default; `make V=1` prints full commands.

.DELETE_ON_ERROR:

OUT      := build
CLANG    ?= clang
BPFTOOL  ?= bpftool
CC       ?= gcc
PYTHON   ?= python3
ARCH     := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

CFLAGS   ?= -g -O2
CFLAGS   += -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Werror -std=gnu11 -Iinclude -I$(OUT) -Iuserspace
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror -Iinclude -I$(OUT) -Iebpf
LDLIBS   := -lbpf -lelf -lz

STAGES   := ebpf/maps.bpf.c $(wildcard ebpf/stage_*.bpf.c)
STAGE_OBJS := $(patsubst ebpf/%.bpf.c,$(OUT)/bpf/%.bpf.o,$(STAGES))
BPF_HDRS := $(wildcard ebpf/*.bpf.h) include/hopscope.h include/hs_parse.h
USER_SRCS := $(wildcard userspace/*.c)
USER_OBJS := $(patsubst userspace/%.c,$(OUT)/obj/%.o,$(USER_SRCS))
USER_HDRS := $(wildcard userspace/*.h) $(wildcard include/*.h)

.PHONY: all deps test demo clean bench
all: $(OUT)/hopscope $(OUT)/sink.bpf.o $(OUT)/prog_run

deps:
	$(Q)./scripts/install-deps.sh

$(OUT) $(OUT)/bpf $(OUT)/obj:
	$(Q)mkdir -p $@

$(OUT)/vmlinux.h: | $(OUT)
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(OUT)/bpf/%.bpf.o: ebpf/%.bpf.c $(BPF_HDRS) $(OUT)/vmlinux.h | $(OUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/sink.bpf.o: ebpf/sink.bpf.c $(OUT)/vmlinux.h | $(OUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# one object, one skeleton: the stages share their maps through the linker
$(OUT)/hopscope.bpf.o: $(STAGE_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(BPFTOOL) gen object $@ $^

$(OUT)/hopscope.skel.h: $(OUT)/hopscope.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name hopscope_bpf > $@

$(OUT)/obj/%.o: userspace/%.c $(USER_HDRS) $(OUT)/hopscope.skel.h | $(OUT)/obj
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(OUT)/hopscope: $(USER_OBJS)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

test: deps all
	$(Q)./tests/run.sh

demo: deps all
	$(Q)./scripts/demo.sh

bench: deps all
	$(Q)$(PYTHON) bench/overhead

clean:
	$(Q)rm -rf $(OUT)

-include kmod/kmod.mk

# BPF unit tests: the XDP stage on crafted frames (BPF_PROG_TEST_RUN)
PROG_RUN_OBJS := $(addprefix $(OUT)/obj/,runmeta.o dropreasons.o ifaces.o json.o)
$(OUT)/prog_run: tests/bpf/prog_run.c $(PROG_RUN_OBJS) $(OUT)/hopscope.skel.h
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(CFLAGS) $< $(PROG_RUN_OBJS) $(LDLIBS) -o $@
