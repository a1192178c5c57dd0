# Watchtower — one plain Makefile. Objects under $(BUILD)/, quiet unless V=1.
#   make            build/bin/wt-edge build/bin/wt-hub build/bin/wtctl
#   make test       check-deps + unit + integration tests (real ClickHouse, real daemons)
#   make check-deps no #include across module rules (docs/architecture.md "## Layout")
#   make asan       the whole suite under ASan+UBSan (objects in build-asan/)
#   make fuzz       libFuzzer targets, FUZZ_SECONDS each (default 30)
#   make bench      benchmarks (ratios against a baseline in the same run)
#   make run        local cluster + demo (appliance/up --dir run/)
#   make soak       long outage/chaos runs (not part of `make test`)
#   make deb        Debian packages in $(BUILD)/deb (appliance/deb/build)
.DELETE_ON_ERROR:
.SUFFIXES:

BUILD ?= build
V ?= 0
ifeq ($(V),1)
Q :=
else
Q := @
endif

# Install missing Debian packages first (idempotent, a no-op when all are
# present), so `make` / `make test` work on a fresh Debian 12 machine.
ifeq ($(filter clean help,$(MAKECMDGOALS)),)
ifneq ($(WT_SKIP_DEPS),1)
DEPS_STATUS := $(shell appliance/install-deps 1>&2 && echo ok)
ifneq ($(DEPS_STATUS),ok)
$(error appliance/install-deps failed; see the messages above)
endif
endif
endif

# make 4.3 does not pass exported variables to $(shell): set the path inline.
PKG_CONFIG := PKG_CONFIG_PATH=$(CURDIR)/appliance/pkgconfig$(if $(PKG_CONFIG_PATH),:$(PKG_CONFIG_PATH)) pkg-config
LIBS_PC := libevent libevent_pthreads libprotobuf-c libzstd rocksdb libcurl \
	mbedtls libconfig jansson libxxhash libdeflate zlib libnghttp2 libcrypto
BPF_PC := libbpf libelf libdw

CC ?= cc
ifeq ($(origin CC),default)
CC := gcc
endif
CSTD := -std=gnu11
# -Wformat-truncation is off: its findings differ between -O1 (asan) and -O2
# and we truncate with snprintf on purpose.
WARN := -Wall -Wextra -Werror -Wno-unused-parameter -Wno-format-truncation -Wshadow -Wformat=2 -Wvla
OPT ?= -O2 -g
SAN ?=
ifeq ($(SANITIZE),1)
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT := -O1 -g
endif
GEN := $(BUILD)/gen
CPPFLAGS += -I. -Icommon -I$(GEN) -D_GNU_SOURCE
CFLAGS += $(CSTD) $(WARN) $(OPT) $(SAN) -pthread -MMD -MP \
	$(shell $(PKG_CONFIG) --cflags $(LIBS_PC) $(BPF_PC))
LDLIBS += $(shell $(PKG_CONFIG) --libs $(LIBS_PC) $(BPF_PC)) -lm -lpthread
LDFLAGS += $(SAN) -pthread

# ---- sources -------------------------------------------------------------
PROTO_SRC := $(wildcard proto/*.proto)
PROTO_C := $(patsubst proto/%.proto,$(GEN)/proto/%.pb-c.c,$(PROTO_SRC))
PROTO_H := $(PROTO_C:.c=.h)
PROTO_OBJ := $(PROTO_C:.c=.o)
# Keep generated sources (they would otherwise count as intermediate and be
# deleted); only these: a global .SECONDARY would let an archive look up to
# date when a newly added source has no object yet.
.SECONDARY: $(PROTO_C) $(PROTO_H)

COMMON_SRC := $(wildcard common/*.c)
EDGE_SRC := $(filter-out edge/main.c,$(wildcard edge/*.c))
HUB_SRC := $(filter-out hub/main.c,$(wildcard hub/*.c))
CLI_SRC := $(filter-out cli/main.c,$(wildcard cli/*.c))

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

LIB_COMMON := $(BUILD)/lib/libwtcommon.a
LIB_EDGE := $(BUILD)/lib/libwtedge.a
LIB_HUB := $(BUILD)/lib/libwthub.a
LIB_CLI := $(BUILD)/lib/libwtcli.a

BINS := $(BUILD)/bin/wt-edge $(BUILD)/bin/wt-hub $(BUILD)/bin/wtctl

UNIT_SRC := $(wildcard tests/unit/*/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRC))
TEST_HELPERS := $(wildcard tests/unit/helpers/*.c)

FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

.PHONY: all test check-deps unit integration asan fuzz bench run soak deb clean help
all: $(BINS)

help:
	@sed -n '2,9p' Makefile

# ---- generated protobuf code ----------------------------------------------
$(GEN)/proto/%.pb-c.c $(GEN)/proto/%.pb-c.h: proto/%.proto
	@mkdir -p $(GEN)/proto
	@echo "  PROTOC  $<"
	$(Q)protoc-c --proto_path=proto --c_out=$(GEN)/proto $<

$(GEN)/proto/%.pb-c.o: $(GEN)/proto/%.pb-c.c
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) $(filter-out -Wshadow,$(CFLAGS)) -c $< -o $@

# Explorer UI: every file of hub/ui/ embedded into wt-hub (hub/http_ui.c).
UI_FILES := $(sort $(wildcard hub/ui/*))
$(GEN)/ui_assets.c: $(UI_FILES) hub/gen_ui_assets.sh
	@mkdir -p $(dir $@)
	@echo "  GEN     $@"
	$(Q)hub/gen_ui_assets.sh $@ $(UI_FILES)

$(GEN)/ui_assets.o: $(GEN)/ui_assets.c
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# ---- BPF: bpf/X.bpf.c -> $(GEN)/bpf/X.skel.h (user side edge/ebpf_X.c) ------
# CO-RE against the running kernel's BTF; each program's instruction count
# is printed and the build fails above BPF_MAX_INSNS (a guard against
# silent growth; raise it deliberately).
BPF_SRC := $(wildcard bpf/*.bpf.c)
BPF_SKELS := $(patsubst bpf/%.bpf.c,$(GEN)/bpf/%.skel.h,$(BPF_SRC))
BPF_CLANG ?= clang
BPF_CFLAGS := -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter -target bpf -D__TARGET_ARCH_x86
BPF_MAX_INSNS ?= 1024
VMLINUX_BTF := /sys/kernel/btf/vmlinux

$(BUILD)/bpf/vmlinux.h: $(wildcard $(VMLINUX_BTF))
	@mkdir -p $(dir $@)
	@test -r $(VMLINUX_BTF) || { echo "error: $(VMLINUX_BTF) is missing: the eBPF sampler needs a kernel built with CONFIG_DEBUG_INFO_BTF=y" >&2; exit 1; }
	@echo "  BTF     $@"
	$(Q)bpftool btf dump file $(VMLINUX_BTF) format c > $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(BUILD)/bpf/vmlinux.h
	@echo "  BPF     $<"
	$(Q)$(BPF_CLANG) $(BPF_CFLAGS) -I$(BUILD)/bpf -Ibpf -c $< -o $@
	$(Q)llvm-objdump -h $@ | while read -r idx name size vma type; do \
		[ "$$type" = TEXT ] && [ "$$size" != 00000000 ] || continue; \
		n=$$((0x$$size / 8)); echo "  BPF     $(notdir $@) $$name: $$n instructions"; \
		[ $$n -le $(BPF_MAX_INSNS) ] || { echo "error: $$name has $$n > BPF_MAX_INSNS=$(BPF_MAX_INSNS) instructions" >&2; exit 1; }; \
	done

$(GEN)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	@mkdir -p $(dir $@)
	@echo "  SKEL    $@"
	$(Q)bpftool gen skeleton $< name wt_$*_bpf > $@

$(call obj,$(wildcard edge/ebpf_*.c)): $(BPF_SKELS)

# Every object may include generated headers.
$(BUILD)/obj/%.o: %.c | $(PROTO_H)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(LIB_COMMON): $(call obj,$(COMMON_SRC)) $(PROTO_OBJ)
$(LIB_EDGE): $(call obj,$(EDGE_SRC))
$(LIB_HUB): $(call obj,$(HUB_SRC)) $(GEN)/ui_assets.o
$(LIB_CLI): $(call obj,$(CLI_SRC))
$(BUILD)/lib/%.a:
	@mkdir -p $(dir $@)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/bin/wt-edge: $(call obj,edge/main.c) $(LIB_EDGE) $(LIB_COMMON)
$(BUILD)/bin/wt-hub: $(call obj,hub/main.c) $(LIB_HUB) $(LIB_COMMON)
$(BUILD)/bin/wtctl: $(call obj,cli/main.c) $(LIB_CLI) $(LIB_COMMON)
$(BINS):
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# ---- unit tests (cmocka), one binary per tests/unit/<module>/test_X.c -------
# A test of module M links M's library (edge, hub, cli) and common.
$(BUILD)/tests/unit/%: tests/unit/%.c $(LIB_EDGE) $(LIB_HUB) $(LIB_CLI) $(LIB_COMMON) $(TEST_HELPERS) | $(PROTO_H)
	@mkdir -p $(dir $@)
	@echo "  CCLD    $@"
	$(Q)$(CC) $(CPPFLAGS) -Itests/unit/helpers $(CFLAGS) $(LDFLAGS) -o $@ $< $(TEST_HELPERS) \
		$(if $(findstring /edge/,$@),$(LIB_EDGE)) $(if $(findstring /hub/,$@),$(LIB_HUB)) \
		$(if $(findstring /cli/,$@),$(LIB_CLI)) $(LIB_COMMON) \
		$(LDLIBS) $(shell $(PKG_CONFIG) --libs cmocka)

# ---- test tools: tests/tools/X.c -> $(BUILD)/tests/tools/X ---------------------
# Helper programs the integration tests start; they link the CLI, edge and
# hub libraries (tls_echo: edge/tls_client.c, hub/tls_server.c) and common.
TOOL_SRC := $(wildcard tests/tools/*.c)
TOOL_BINS := $(patsubst tests/tools/%.c,$(BUILD)/tests/tools/%,$(TOOL_SRC))
$(BUILD)/tests/tools/%: tests/tools/%.c $(LIB_CLI) $(LIB_EDGE) $(LIB_HUB) $(LIB_COMMON) | $(PROTO_H)
	@mkdir -p $(dir $@)
	@echo "  CCLD    $@"
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_CLI) $(LIB_EDGE) $(LIB_HUB) $(LIB_COMMON) $(LDLIBS)

# ---- benchmarks ----------------------------------------------------------------
$(BUILD)/bench/%: bench/%.c $(LIB_COMMON)
	@mkdir -p $(dir $@)
	@echo "  CCLD    $@"
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_COMMON) $(LDLIBS)

# ---- test entry points ---------------------------------------------------------
# tests/run drives everything and prints "N passed, N failed".
test: check-deps $(BINS) $(UNIT_BINS) $(TOOL_BINS)
	$(Q)BUILD=$(BUILD) tests/run all

check-deps:
	$(Q)tests/check-deps

unit: $(BINS) $(UNIT_BINS)
	$(Q)BUILD=$(BUILD) tests/run unit

integration: $(BINS) $(UNIT_BINS) $(TOOL_BINS)
	$(Q)BUILD=$(BUILD) tests/run integration

asan:
	$(Q)$(MAKE) --no-print-directory BUILD=build-asan SANITIZE=1 test

fuzz:
	$(Q)BUILD=build-fuzz tests/fuzz/run $(FUZZ_SRC)

bench: $(BINS) $(BENCH_BINS)
	$(Q)BUILD=$(BUILD) bench/run

run: $(BINS)
	$(Q)appliance/up --dir run && appliance/demo --dir run

# Debian packages watchtower-{edge,hub,cli} in $(BUILD)/deb (appliance/deb/build)
deb: $(BINS)
	$(Q)BUILD=$(BUILD) appliance/deb/build

soak: $(BINS) $(UNIT_BINS)
	$(Q)BUILD=$(BUILD) WT_SOAK=1 tests/run soak

clean:
	rm -rf build build-asan build-fuzz

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
