# SPDX-License-Identifier: GPL-2.0
#
# kvbatch top-level Makefile. See README.md ("Build") for the variables.
#
#   make                       build kvbatch.ko for KERNELRELEASE
#   make KERNELRELEASE=<ver>   build for another installed kernel
#   make KDIR=<dir> KSRC=<dir> use another build tree / kernel source tree
#   make all-kernels           build for every supported installed kernel
#   make kvssd                 build/<ver>/kvssd/kvssd.ko, a deep SSD model
#                              as a block device (tests, benchmarks)
#   make test                  the test suite (what .ci/run runs)
#   make test-extended         the same with every test on every kernel
#   make test-debug            selftests on a KASAN/lockdep/kmemleak kernel
#   make soak                  10 minutes of mixed load with every stress
#   make unit                  policy core unit tests (userspace)
#   make tools                 build/tools/kvbench (load generator) and
#                              tools/kvsim/kvsim (scheduling simulator)
#   make demo                  the main job, short: kvbatch against the peers
#   make bench                 the comparison suite (build/bench/), ~27 min
#                              per kernel
#   make install / uninstall   put kvbatch.ko in /lib/modules/<ver>/updates
#   make deb                   build/deb/kvbatch-dkms_<ver>_all.deb (DKMS)
#   make checkpatch sparse     static checks
#   make clean

TOP		:= $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD		:= $(TOP)/build

# The kernel series the test suite passes on. The elevator API and the
# layouts of the private block/ structures change from series to series, so
# any other series is refused at build time (KVB_ALLOW_UNTESTED=1 to port).
TESTED_SERIES	:= 6.1 6.12 7.3

# Debian 13's 7.3 kernel (trixie-backports) is installed, with its headers
# and build tools, in the cached Debian 13 root of scripts/trixie-root.sh,
# which keeps its vmlinuz in /usr/lib/modules/<release>/ (so does a guest
# booted on that root).
KVB_TRIXIE_CACHE ?= /var/cache/kvbatch
TRIXIE_ROOT	:= $(KVB_TRIXIE_CACHE)/trixie-root
krels_in	= $(patsubst /boot/vmlinuz-%,%,$(wildcard /boot/vmlinuz-$(1))) \
		  $(patsubst /usr/lib/modules/%/vmlinuz,%,$(wildcard /usr/lib/modules/$(1)/vmlinuz)) \
		  $(patsubst $(TRIXIE_ROOT)/usr/lib/modules/%/vmlinuz,%,$(wildcard $(TRIXIE_ROOT)/usr/lib/modules/$(1)/vmlinuz))

# Debian kernels kvbatch supports and tests: the newest 6.1 and 6.12 in
# /boot and the newest 7.3 (in the Debian 13 root, or in / in its guest).
newest_krel	= $(lastword $(sort $(call krels_in,$(1))))
KREL_61		:= $(call newest_krel,6.1.*-amd64)
KREL_612	:= $(call newest_krel,6.12.*-amd64)
KREL_73		:= $(call newest_krel,7.3.*-amd64)
SUPPORTED_KRELS	:= $(strip $(KREL_61) $(KREL_612) $(KREL_73))

# Default: the running kernel if its build tree is installed, else the 6.1
# kernel the guest boots.
ifeq ($(origin KERNELRELEASE),undefined)
  ifneq ($(wildcard /lib/modules/$(shell uname -r)/build/Makefile),)
    KERNELRELEASE := $(shell uname -r)
  else
    KERNELRELEASE := $(KREL_61)
  endif
endif
KREL		:= $(KERNELRELEASE)
KSERIES		:= $(shell echo '$(KREL)' | sed -n 's/^\([0-9]*\.[0-9]*\)[.-].*/\1/p')

# The module's name (Kbuild). Another than kvbatch builds a copy that
# loads beside it (tools/kvab's variants) into build/renamed/NAME/KREL, so
# that it never replaces build/KREL/kvbatch.ko. It names the elevator (at
# most 15 characters) and the trace system (a C identifier).
KVB_MODNAME	?= kvbatch
ifeq ($(shell echo '$(KVB_MODNAME)' | grep -xE '[a-z][a-z0-9_]{0,14}'),)
  $(error KVB_MODNAME '$(KVB_MODNAME)' is not 1-15 lower-case letters, digits or _, a letter first)
endif
ifeq ($(KVB_MODNAME),kvbatch)
  OBJDIR	:= $(BUILD)/$(KREL)
else
  OBJDIR	:= $(BUILD)/renamed/$(KVB_MODNAME)/$(KREL)
endif

# A kernel whose build tree exists only in the Debian 13 root (7.3 on a
# Debian 12 host) is built inside that root (scripts/in-root.sh), with
# its gcc-14 and kbuild binaries: the modules, sparse and checkpatch
# targets re-run themselves there with KVB_IN_ROOT=1.
IN_ROOT		:=
ifeq ($(origin KDIR)$(KVB_IN_ROOT),undefined)
  ifeq ($(wildcard /lib/modules/$(KREL)/build/Makefile),)
    ifneq ($(wildcard $(TRIXIE_ROOT)/lib/modules/$(KREL)/build/Makefile),)
      IN_ROOT	:= $(TRIXIE_ROOT)
    endif
  endif
endif
KDIR		?= /lib/modules/$(KREL)/build

# Private block/ headers: from KSRC if given, else unpacked from the
# matching Debian linux-source package into the build cache.
ifneq ($(KSRC),)
  KVB_BLOCK_INC	:= $(abspath $(KSRC))/block
  KSRC_DIR	:= $(abspath $(KSRC))
else
  KSRC_DIR	:= $(BUILD)/ksrc/$(KREL)
  KVB_BLOCK_INC	:= $(KSRC_DIR)/block
endif

# kvssd.ko (kvssd/): a deep SSD model as a block device for the tests and
# benchmarks, not in the Debian package. Built in build/KREL/kvssd/ from
# links, "SOURCE:LINK": its driver is linked as kvssd-main.c (kvssd/Kbuild).
KVSSD_DIR	:= $(BUILD)/$(KREL)/kvssd
KVSSD_LINKS	:= Kbuild:Kbuild kvssd.c:kvssd-main.c \
		   kvssd-model.c:kvssd-model.c kvssd-model.h:kvssd-model.h

SOURCES		:= Kbuild kv-sched.c kv-policy.c kv-depth.c kv-debugfs.c kv-defs.h kv-policy.h kv-depth.h kv-elv.h kv-tunables.h kv-ioprio.h kv-compat.h kv-trace.h scripts
CSOURCES	:= kv-sched.c kv-policy.c kv-depth.c kv-debugfs.c kv-defs.h kv-policy.h kv-depth.h kv-elv.h kv-tunables.h kv-ioprio.h kv-compat.h kv-trace.h

.PHONY: all modules prepare all-kernels kvssd test test-extended test-debug soak \
	unit demo bench \
	checkpatch sparse \
	deps clean help print-kernels print-series selftests-bin tools kvsim \
	install uninstall deb

all: modules

print-kernels:
	@echo $(SUPPORTED_KRELS)

print-series:
	@echo $(TESTED_SERIES)

help:
	@sed -n '3,/^$$/p' $(TOP)/Makefile | sed 's/^# \{0,1\}//'

deps:
	@$(TOP)/scripts/install-deps.sh

prepare:
	@test -n "$(KREL)" || { echo "kvbatch: no kernel to build for: apt-get install linux-image-amd64 linux-headers-amd64 (or pass KERNELRELEASE=)" >&2; exit 1; }
	@case " $(TESTED_SERIES) " in *" $(KSERIES) "*) ;; *) \
		[ "$(KVB_ALLOW_UNTESTED)" = 1 ] || { echo "kvbatch: kernel $(KREL) (series $(or $(KSERIES),unknown)) is not a supported series (tested: $(TESTED_SERIES)): the private block-layer structures kvbatch hands the core change between series; set KVB_ALLOW_UNTESTED=1 to build anyway (porting only)" >&2; exit 1; }; \
		echo "kvbatch: warning: building for untested kernel $(KREL) (KVB_ALLOW_UNTESTED=1)" >&2 ;; esac
	@case "$(KREL)" in *+deb13-*) \
		test -f "$(KDIR)/Makefile" || { echo "kvbatch: no build tree for $(KREL) in $(KDIR): a Debian 13 kernel is built in the Debian 13 root: run scripts/trixie-root.sh (or pass KDIR=)" >&2; exit 1; } ;; esac
	@test -f "$(KDIR)/Makefile" || { echo "kvbatch: no build tree for $(KREL) in $(KDIR): apt-get install linux-headers-$(KREL) (or pass KDIR=)" >&2; exit 1; }
ifeq ($(KSRC),)
	@$(TOP)/scripts/ksrc-prepare.sh $(KREL) $(KSRC_DIR)
else
	@test -f "$(KVB_BLOCK_INC)/elevator.h" || { echo "kvbatch: $(KVB_BLOCK_INC)/elevator.h not found: KSRC must be the kernel source tree of $(KREL)" >&2; exit 1; }
endif
	@mkdir -p $(OBJDIR)
	@for f in $(SOURCES); do ln -sfn $(TOP)/$$f $(OBJDIR)/$$f; done

ifneq ($(IN_ROOT),)
modules sparse checkpatch kvssd:
	@echo "  ROOT    $@ for $(KREL) in $(IN_ROOT)"
	@$(TOP)/scripts/in-root.sh $(IN_ROOT) $(TOP) make --no-print-directory \
		KVB_IN_ROOT=1 KERNELRELEASE=$(KREL) KVB_MODNAME=$(KVB_MODNAME) \
		$(if $(KVB_ALLOW_UNTESTED),KVB_ALLOW_UNTESTED=$(KVB_ALLOW_UNTESTED)) $@
else
modules: prepare
	$(MAKE) -C $(KDIR) M=$(OBJDIR) KVB_BLOCK_INC=$(KVB_BLOCK_INC) \
		KVB_MODNAME=$(KVB_MODNAME) modules
	@echo "  BUILT   $(OBJDIR)/$(KVB_MODNAME).ko"

kvssd:
	@test -n "$(KREL)" || { echo "kvssd: no kernel to build for: pass KERNELRELEASE=" >&2; exit 1; }
	@test -f "$(KDIR)/Makefile" || { echo "kvssd: no build tree for $(KREL) in $(KDIR): apt-get install linux-headers-$(KREL) (or pass KDIR=)" >&2; exit 1; }
	@mkdir -p $(KVSSD_DIR)
	@for l in $(KVSSD_LINKS); do ln -sfn $(TOP)/kvssd/$${l%%:*} $(KVSSD_DIR)/$${l#*:}; done
	$(MAKE) -C $(KDIR) M=$(KVSSD_DIR) modules
	@echo "  BUILT   $(KVSSD_DIR)/kvssd.ko"
endif

all-kernels:
	@test -n "$(SUPPORTED_KRELS)" || { echo "kvbatch: no supported kernel in /boot: run scripts/install-deps.sh" >&2; exit 1; }
	@for k in $(SUPPORTED_KRELS); do \
		$(MAKE) -C $(TOP) --no-print-directory KERNELRELEASE=$$k modules kvssd || exit 1; \
	done

# Install where modprobe (and the block layer's request_module of
# "kvbatch-iosched") finds it: the updates/ tree has precedence over the
# kernel's own modules. DESTDIR installs into a staging root, without depmod.
MODDIR		= $(DESTDIR)/lib/modules/$(KREL)/updates

install:
	@test -f $(OBJDIR)/kvbatch.ko || { echo "kvbatch: $(OBJDIR)/kvbatch.ko not built: run make KERNELRELEASE=$(KREL) first" >&2; exit 1; }
	install -D -m 0644 $(OBJDIR)/kvbatch.ko $(MODDIR)/kvbatch.ko
	$(if $(DESTDIR),,depmod -a $(KREL))

uninstall:
	rm -f $(MODDIR)/kvbatch.ko
	$(if $(DESTDIR),,depmod -a $(KREL))

# The kvbatch-dkms Debian package, built from a copy of exactly the files
# it ships so that the working tree (and its build cache) is never touched
# by debhelper.
DEB_VERSION	:= $(shell sed -n '1s/.*(\(.*\)).*/\1/p' $(TOP)/debian/changelog)
DEB_FILES	:= $(SOURCES) Makefile dkms.conf debian udev modprobe.d \
		   tools/include/kvbatch/kvbatch.h tools/python/kvbatch.py
DEB_STAGE	:= $(BUILD)/deb/kvbatch-$(DEB_VERSION)

deb:
	@v=$$(sed -n 's/^#define KVB_VERSION[[:space:]]*"\(.*\)"/\1/p' $(TOP)/kv-defs.h); \
	[ "$$v" = "$(DEB_VERSION)" ] || \
		{ echo "kvbatch: versions disagree: kv-defs.h $$v, debian/changelog $(DEB_VERSION)" >&2; exit 1; }
	@grep -qx 'PACKAGE_VERSION="#MODULE_VERSION#"' $(TOP)/dkms.conf || \
		{ echo "kvbatch: dkms.conf must leave PACKAGE_VERSION to dh_dkms: PACKAGE_VERSION=\"#MODULE_VERSION#\"" >&2; exit 1; }
	rm -rf $(BUILD)/deb
	mkdir -p $(DEB_STAGE)
	cd $(TOP) && cp -a --parents $(DEB_FILES) $(DEB_STAGE)/
	cd $(DEB_STAGE) && dpkg-buildpackage -us -uc -b > ../dpkg-buildpackage.log 2>&1 || \
		{ tail -30 ../dpkg-buildpackage.log >&2; exit 1; }
	@echo "  DEB     $(BUILD)/deb/kvbatch-dkms_$(DEB_VERSION)_all.deb"

# checkpatch.pl comes from the kernel source package of the target kernel.
# The trace header names itself to the tracepoint machinery as the bare
# tokens kv-trace (TRACE_INCLUDE_FILE), whose hyphen checkpatch reads as
# a minus without spaces: its spacing checks are off for that file alone.
# kvssd/ builds for the three series through a few LINUX_VERSION_CODE
# helpers, which checkpatch asks in-tree code not to have.
ifeq ($(IN_ROOT),)
checkpatch: prepare
ifeq ($(KSRC),)
	@$(TOP)/scripts/ksrc-prepare.sh --checkpatch $(KREL) $(KSRC_DIR)
endif
	$(KSRC_DIR)/scripts/checkpatch.pl --strict --no-tree --show-types \
		--ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG \
		-f $(addprefix $(TOP)/,$(filter-out kv-trace.h,$(CSOURCES)))
	$(KSRC_DIR)/scripts/checkpatch.pl --strict --no-tree --show-types \
		--ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG,SPACING \
		-f $(TOP)/kv-trace.h
	$(KSRC_DIR)/scripts/checkpatch.pl --strict --no-tree --show-types \
		--ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG,LINUX_VERSION_CODE \
		-f $(wildcard $(TOP)/kvssd/*.[ch])

sparse: prepare
	$(MAKE) -C $(KDIR) M=$(OBJDIR) KVB_BLOCK_INC=$(KVB_BLOCK_INC) C=2 \
		CHECK=sparse KVB_MODNAME=$(KVB_MODNAME) modules
endif

# Userspace helpers the selftests run in the guest.
SELFTEST_BINS	:= $(BUILD)/selftests/kvb_seqio $(BUILD)/selftests/kvb_failnth \
		   $(BUILD)/selftests/kvb_firstwrite $(BUILD)/selftests/kvb_uring_mix
USER_CFLAGS	:= -O2 -g -Wall -Wextra -Werror
# What the C tools include from the tree: the policy core's headers and its
# userspace shim (the top), and the tools' own (tools/include).
TOOLS_CPPFLAGS	:= -I$(TOP) -I$(TOP)/tools/include

selftests-bin: $(SELFTEST_BINS)

# Tools: the load generator, the tagging example, the simulator, and
# the QEMU plugin of tools/kvab -p.
TOOLS_BINS	:= $(BUILD)/tools/kvbench $(BUILD)/tools/recall \
		   $(BUILD)/tools/tcg-insns.so

tools: $(TOOLS_BINS) kvsim

# Built in place, tools/kvsim/kvsim, with the policy core from kv-policy.c.
kvsim:
	@$(MAKE) --no-print-directory -C $(TOP)/tools/kvsim CFLAGS="$(USER_CFLAGS)" TOOLS_CPPFLAGS="$(TOOLS_CPPFLAGS)" O=$(BUILD)/tools/kvsim

# kvbench --trace reads JSONL with json-c (libjson-c-dev, scripts/deps.txt).
KVBENCH_SRCS	:= $(addprefix $(TOP)/tools/kvbench/,kvbench.c kvtier.c kvtrace.c)
KVBENCH_HDRS	:= $(addprefix $(TOP)/tools/kvbench/,kvtier.h kvtrace.h) \
		   $(TOP)/kv-ioprio.h $(TOP)/kv-user.h $(TOP)/tools/include/kv-rand.h \
		   $(TOP)/tools/include/kvbatch/kvbatch.h
JSONC_CFLAGS	:= $(shell pkg-config --cflags json-c 2>/dev/null)
JSONC_LIBS	:= $(or $(shell pkg-config --libs json-c 2>/dev/null),-ljson-c)

$(BUILD)/tools/kvbench: $(KVBENCH_SRCS) $(KVBENCH_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) $(TOOLS_CPPFLAGS) $(JSONC_CFLAGS) -o $@ $(KVBENCH_SRCS) -luring \
		$(JSONC_LIBS) -lm

$(BUILD)/tools/recall: $(TOP)/tools/examples/recall.c $(TOP)/kv-ioprio.h \
		$(TOP)/tools/include/kvbatch/kvbatch.h
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) $(TOOLS_CPPFLAGS) -o $@ $< -luring

$(BUILD)/tools/tcg-insns.so: $(TOP)/tools/tcg-insns.c
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -shared -fPIC -fvisibility=hidden -o $@ $< -lpthread

$(BUILD)/selftests/kvb_seqio: $(TOP)/selftests/kvb_seqio.c
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -o $@ $< -luring

$(BUILD)/selftests/kvb_failnth: $(TOP)/selftests/kvb_failnth.c
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -o $@ $<

$(BUILD)/selftests/kvb_firstwrite: $(TOP)/selftests/kvb_firstwrite.c
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -o $@ $< -lpthread

$(BUILD)/selftests/kvb_uring_mix: $(TOP)/selftests/kvb_uring_mix.c
	@mkdir -p $(dir $@)
	$(CC) $(USER_CFLAGS) -o $@ $< -luring

# Policy core unit tests in userspace (TAP).
unit:
	@$(MAKE) --no-print-directory -C $(TOP)/selftests/unit run

test: deps
	@$(TOP)/selftests/run-all.sh

# make test with the package test (a DKMS build in each guest: 6 to 9
# minutes per kernel) and the install test on every kernel.
test-extended: deps
	@KVB_ALL_KERNELS=1 $(TOP)/selftests/run-all.sh

# The debug-kernel run (on each series of DEBUG_SERIES, default
# "6.1 6.12 7.3"; each kernel is built once, cached in /var/cache/kvbatch,
# 7.3's in the Debian 13 root with its gcc-14) and the soak (SOAK_SECONDS,
# default 600, on SOAK_KERNEL, default the Debian 6.1 kernel; KVB_DEBUG=6.1,
# 6.12 or 7.3, or 1 for 6.1: on that series' debug kernel, booted from its
# bzImage like make test-debug does).
test-debug: deps
	@$(TOP)/selftests/run-debug.sh

SOAK_SECONDS	?= 600
soak: deps
	@k=$${SOAK_KERNEL:-$(KREL_61)}; \
	case "$${KVB_DEBUG:-}" in \
	'') ;; \
	1|6.1|6.12|7.3) s=$$KVB_DEBUG; [ "$$s" != 1 ] || s=6.1; \
		k=$$($(TOP)/scripts/debug-kernel.sh -s $$s) || exit 1; \
		export KVVM_PVH=0 ;; \
	*) echo "make soak: KVB_DEBUG is 1, 6.1, 6.12 or 7.3" >&2; exit 2 ;; \
	esac; \
	$(MAKE) --no-print-directory KERNELRELEASE=$$k modules tools selftests-bin && \
	$(TOP)/tools/kvvm -k $$k -m 3072 -t $$(( $(SOAK_SECONDS) + 900 )) -- \
		env SOAK_SECONDS=$(SOAK_SECONDS) selftests/kvb_soak.sh

# The comparison suite (tools/kvsuite): every supported kernel, full
# length; "make demo" is its short version on one kernel.
bench: deps
	@$(TOP)/tools/kvsuite

demo: deps
	@$(TOP)/tools/kvsuite --quick

clean:
	rm -rf $(BUILD) $(TOP)/tools/kvsim/kvsim
