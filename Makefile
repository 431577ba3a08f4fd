# fabric-bench build.
#
# `make` builds every binary this machine can build. Layout conventions, so a
# new module needs no edit here:
#   bench/<module>/*.c         objects of build/lib<module>.a
#   bench/<module>/<x>_main.c  the main of build/bin/fabric-<x>
#   bench/<module>/*_nccl.c    compiled only when CUDA and NCCL are found
#   tests/unit/test_*.c        unit test programs, build/tests/test_*
# Every program links every module library; the linker keeps what it uses.

CUDA_HOME ?= /usr/local/cuda
NCCL_HOME ?= $(CUDA_HOME)
BUILD     ?= build
SAN       ?=
CC        := mpicc

CFLAGS   ?= -O2 -g
CPPFLAGS += -Ibench -D_GNU_SOURCE -MMD -MP
XCFLAGS  := -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
            -Wno-missing-field-initializers
LDLIBS   := -ljson-c -lhwloc -libverbs -ldl -lpthread -lm

ifeq ($(SAN),1)
  XCFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer \
             -fno-sanitize-recover=undefined
  LDFLAGS += -fsanitize=address,undefined
endif

# NCCL backend: compiled whenever the headers and libraries are present, GPU
# or not; without them the build goes on without that backend.
CUDA_LIB := $(firstword $(wildcard $(CUDA_HOME)/lib64 $(CUDA_HOME)/lib))
NCCL_LIB := $(firstword $(wildcard $(NCCL_HOME)/lib64 $(NCCL_HOME)/lib))
HAVE_NCCL := $(if $(and $(wildcard $(CUDA_HOME)/include/cuda_runtime.h),\
               $(wildcard $(NCCL_HOME)/include/nccl.h),$(CUDA_LIB),$(NCCL_LIB)),1,0)
ifeq ($(HAVE_NCCL),1)
  CPPFLAGS += -DHAVE_NCCL=1 -isystem $(CUDA_HOME)/include -isystem $(NCCL_HOME)/include
  LDLIBS   += -L$(NCCL_LIB) -Wl,-rpath,$(NCCL_LIB) -lnccl \
              -L$(CUDA_LIB) -Wl,-rpath,$(CUDA_LIB) -lcudart
endif

# `make MODULES="core report" BUILD=build-report` builds a subset in its own
# tree: handy while one module is being worked on and another does not build.
MODULES ?= $(notdir $(patsubst %/,%,$(sort $(dir $(wildcard bench/*/*.c)))))
ALL_SRCS := $(foreach m,$(MODULES),$(wildcard bench/$(m)/*.c))
ifneq ($(HAVE_NCCL),1)
  ALL_SRCS := $(filter-out %_nccl.c,$(ALL_SRCS))
endif
MAIN_SRCS := $(filter %_main.c,$(ALL_SRCS))
LIB_SRCS  := $(filter-out %_main.c,$(ALL_SRCS))
OBJ = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

LIBS := $(foreach m,$(MODULES),$(BUILD)/lib$(m).a)
BINS := $(foreach s,$(MAIN_SRCS),$(BUILD)/bin/fabric-$(patsubst %_main.c,%,$(notdir $(s))))
# Unit tests are named after their module: tests/unit/test_<module>[_x].c
TEST_SRCS := $(foreach m,$(MODULES),$(wildcard tests/unit/test_$(m).c tests/unit/test_$(m)_*.c))
TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
# nccl-tests names: links to fabric-coll, which reads its argv[0].
PERF_NAMES := all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv
PERF_LINKS := $(if $(filter %/coll_main.c,$(MAIN_SRCS)),$(foreach n,$(PERF_NAMES),$(BUILD)/bin/$(n)_perf))

DEPS_STAMP := $(BUILD)/.deps-ok

.PHONY: all deps demo test bench check-asan check-valgrind clean lint help
all: $(BINS) $(PERF_LINKS) $(TESTS)

help:
	@echo "make            build everything (NCCL backend: $(if $(filter 1,$(HAVE_NCCL)),yes,no))"
	@echo "make demo       host-memory all_reduce sweep on local ranks, verdict and plot"
	@echo "make test       all tests; ends with 'N passed, N failed'"
	@echo "make bench      harness overhead and probe throughput against baselines"

# Installs missing Debian packages once per build tree.
$(DEPS_STAMP): scripts/install-deps.sh
	@scripts/install-deps.sh
	@mkdir -p $(@D) && touch $@
deps: $(DEPS_STAMP)

define module_lib
$(BUILD)/lib$(1).a: $(call OBJ,$(filter bench/$(1)/%,$(LIB_SRCS)))
	@mkdir -p $$(@D)
	rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach m,$(MODULES),$(eval $(call module_lib,$(m))))

$(BUILD)/obj/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(XCFLAGS) $(CFLAGS) -c -o $@ $<

LINK = $(CC) $(LDFLAGS) -o $@ $< -Wl,--start-group $(LIBS) -Wl,--end-group $(LDLIBS)

define bin_rule
$(BUILD)/bin/fabric-$(1): $(call OBJ,$(2)) $(LIBS)
	@mkdir -p $$(@D)
	$$(LINK)
endef
$(foreach s,$(MAIN_SRCS),$(eval $(call bin_rule,$(patsubst %_main.c,%,$(notdir $(s))),$(s))))

$(PERF_LINKS): $(BUILD)/bin/fabric-coll
	ln -sf fabric-coll $@

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(LIBS)
	@mkdir -p $(@D)
	$(LINK)

demo: all
	scripts/demo.sh

test: all
	BUILD=$(BUILD) tests/run

bench: all
	scripts/bench.sh

lint:
	tests/run test_shellcheck

clean:
	rm -rf $(BUILD) build-asan

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
