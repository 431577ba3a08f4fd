# fabric-bench build.
#
# `make` builds every binary this machine can build. Layout conventions, so a
# new module needs no edit here:
#   bench/<module>/*.c         objects of build/lib<module>.a
#   bench/<module>/<x>_main.c  the main of build/bin/fabric-<x>
#   bench/<module>/*_nccl.c    compiled only when CUDA and NCCL are found
#   bench/<module>/*_cuda.c    compiled only when the CUDA runtime is found
#   bench/<module>/*_ofi.c     compiled only when libfabric is found (HAVE_OFI)
#   bench/<module>/*.cu        CUDA kernels, compiled by nvcc when it is found (HAVE_KERNELS)
#   bench/<module>/module.mk   `<module>_USES := ...`: the layers below it
#   tests/unit/test_*.c        unit test programs, build/tests/test_*
#
# Layers are enforced, not advised: a module's sources see only the headers
# of the modules it USES (each gets an include tree of its own under
# build/inc), and its programs and tests link only those libraries, so a
# wrong arrow fails to compile or to link. See docs/architecture.md.

CUDA_HOME ?= /usr/local/cuda
NCCL_HOME ?= $(CUDA_HOME)
BUILD     ?= build
SAN       ?=
CC        := mpicc

CFLAGS   ?= -O2 -g
CPPFLAGS += -D_GNU_SOURCE -MMD -MP
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
HAVE_CUDA := $(if $(and $(wildcard $(CUDA_HOME)/include/cuda_runtime.h),$(CUDA_LIB)),1,0)
HAVE_NCCL := $(if $(and $(filter 1,$(HAVE_CUDA)),$(wildcard $(NCCL_HOME)/include/nccl.h),$(NCCL_LIB)),1,0)
ifeq ($(HAVE_CUDA),1)
  CPPFLAGS += -DHAVE_CUDA=1 -isystem $(CUDA_HOME)/include
  LDLIBS   += -L$(CUDA_LIB) -Wl,-rpath,$(CUDA_LIB) -lcudart
endif
ifeq ($(HAVE_NCCL),1)
  CPPFLAGS += -DHAVE_NCCL=1 $(if $(filter $(CUDA_HOME),$(NCCL_HOME)),,-isystem $(NCCL_HOME)/include)
  LDLIBS   := $(filter-out -lcudart,$(LDLIBS)) -L$(NCCL_LIB) -Wl,-rpath,$(NCCL_LIB) -lnccl -lcudart
endif

# libfabric (the probe's ofi transport, the doctor's EFA check): from
# LIBFABRIC_HOME when given, else pkg-config's libfabric; without it the
# programs build and say so when asked for it.
LIBFABRIC_HOME ?=
comma := ,
OFI_CFLAGS := $(if $(LIBFABRIC_HOME),$(if $(wildcard $(LIBFABRIC_HOME)/include/rdma/fabric.h),-isystem $(LIBFABRIC_HOME)/include),$(shell pkg-config --cflags libfabric 2>/dev/null))
OFI_LIBDIR := $(if $(LIBFABRIC_HOME),$(firstword $(wildcard $(LIBFABRIC_HOME)/lib64/libfabric.so $(LIBFABRIC_HOME)/lib/libfabric.so $(LIBFABRIC_HOME)/lib/*/libfabric.so)))
HAVE_OFI := $(if $(LIBFABRIC_HOME),$(if $(and $(OFI_CFLAGS),$(OFI_LIBDIR)),1,0),$(if $(shell pkg-config --exists libfabric 2>/dev/null && echo y),1,0))
ifeq ($(HAVE_OFI),1)
  CPPFLAGS += -DHAVE_OFI=1 $(OFI_CFLAGS)
  OFI_LDIR := $(if $(OFI_LIBDIR),$(patsubst %/,%,$(dir $(OFI_LIBDIR))))
  LDLIBS   += $(if $(OFI_LDIR),-L$(OFI_LDIR) -Wl$(comma)-rpath$(comma)$(OFI_LDIR),$(shell pkg-config --libs-only-L libfabric 2>/dev/null)) -lfabric
endif

# Validation kernels (bench/<module>/*.cu): compiled with nvcc where the
# toolkit has it (and its host compiler is here), for every architecture it
# lists and as PTX of the newest, which newer GPUs compile when they load
# it. Without nvcc, checks stage through host memory (the output's first
# line says so). `make NVCC=` builds that way.
NVCC       ?= $(CUDA_HOME)/bin/nvcc
NVCC_CCBIN ?= g++
HAVE_KERNELS := $(if $(and $(filter 1,$(HAVE_NCCL)),$(NVCC),$(wildcard $(NVCC)),$(shell command -v $(NVCC_CCBIN) 2>/dev/null)),1,0)
ifeq ($(HAVE_KERNELS),1)
  CUDA_ARCHS  := $(shell $(NVCC) --list-gpu-arch 2>/dev/null | sed -n 's/^compute_//p' | sort -n)
  CUDA_NEWEST := $(lastword $(CUDA_ARCHS))
  NVCC_GENCODE := $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
                  -gencode arch=compute_$(CUDA_NEWEST),code=compute_$(CUDA_NEWEST)
  NVCCFLAGS ?= -O3
  CPPFLAGS  += -DHAVE_KERNELS=1
  # The kernels' launch stubs are C++: thread-safe statics.
  LDLIBS    += -lstdc++
endif

# The CUDA runtime and NCCL stand-in (tests/standin, docs/standin.md):
# built against the real headers whenever they are here, never linked into
# a program; the same programs load it through LD_LIBRARY_PATH
# (scripts/gpu-standin.sh). Plain cc, no sanitizers: every build loads it.
STANDIN_SRCS := $(wildcard tests/standin/*.c)
STANDIN_DIR  := $(BUILD)/standin
STANDIN_CC   ?= cc
CUDART_MAJOR := $(if $(filter 1,$(HAVE_CUDA)),$(shell sed -n 's/^\#define CUDART_VERSION *\([0-9]*\)[0-9][0-9][0-9]$$/\1/p' $(CUDA_HOME)/include/cuda_runtime_api.h))
STANDIN_CUDART := $(STANDIN_DIR)/libcudart.so.$(CUDART_MAJOR)
# The shared libraries tests load in front of the real ones (the stand-ins,
# the fault injector): one warning set and code model for all of them.
PRELOAD_FLAGS := -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -D_GNU_SOURCE -fPIC -O2 -g
STANDIN_FLAGS := $(PRELOAD_FLAGS) -pthread -Ibench -isystem $(CUDA_HOME)/include $(if $(filter $(CUDA_HOME),$(NCCL_HOME)),,-isystem $(NCCL_HOME)/include)
STANDIN_LINK  = $(STANDIN_CC) $(STANDIN_FLAGS) -shared -Wl,-z,defs -Wl,-soname,$(@F) -o $@

# The libibverbs stand-in (tests/standin/ibv_*.c and the provider and
# rdmacm stubs beside it, docs/standin.md "The RDMA stand-in"): compiled
# against the real <infiniband/verbs.h> whenever it is here, into a
# directory of its own so that the GPU stand-in's users never load it by
# accident; scripts/rdma-standin.sh puts it on LD_LIBRARY_PATH.
RDMA_STANDIN_DIR   := $(BUILD)/standin-rdma
HAVE_VERBS_H       := $(shell printf '\043include <infiniband/verbs.h>\n' | $(STANDIN_CC) -E -x c - >/dev/null 2>&1 && echo 1)
RDMA_STANDIN_FLAGS := $(PRELOAD_FLAGS) -pthread
RDMA_STANDIN_LINK   = $(STANDIN_CC) $(RDMA_STANDIN_FLAGS) -shared -Wl,-z,defs -Wl,-soname,$(@F) \
                      -Wl,--version-script=$(filter %.map,$^) -o $@ $(filter %.c,$^)
RDMA_STANDIN_LIBS  := $(addprefix $(RDMA_STANDIN_DIR)/,libibverbs.so.1 libmlx5.so.1 libefa.so.1 librdmacm.so.1)

# The MPI fault injector (tests/tools/mpi_fault.c): a test loads it with
# LD_PRELOAD to stop or kill one rank at one MPI call, through MPI's
# profiling interface, so the programs carry no test hook. Built with
# mpicc, no sanitizers (it is preloaded ahead of every other library).
FAULT_LIB := $(BUILD)/tools/libmpifault.so

# Each module names the layers it uses, nearest first, in its module.mk.
include $(wildcard bench/*/module.mk)
ALL_MODULES := $(notdir $(patsubst %/,%,$(sort $(dir $(wildcard bench/*/*.c)))))
uses = $($(1)_USES)
closure = $(sort $(1) $(foreach m,$(1),$(call uses,$(m))))

# `make MODULES=report` builds one tool with its layers alone, in its own tree
# if BUILD is given too.
MODULES ?= $(ALL_MODULES)
override MODULES := $(call closure,$(MODULES))
# The stand-in stands in for what coll and probe call.
STANDIN := $(if $(and $(filter 1,$(HAVE_NCCL)),$(STANDIN_SRCS),$(CUDART_MAJOR),$(filter coll probe,$(MODULES))),$(STANDIN_CUDART) $(STANDIN_DIR)/libnccl.so.2 $(STANDIN_DIR)/libcuda.so.1)
RDMA_STANDIN := $(if $(and $(HAVE_VERBS_H),$(wildcard tests/standin/ibv_*.c),$(filter probe,$(MODULES))),$(RDMA_STANDIN_LIBS))
FAULT := $(if $(and $(wildcard tests/tools/mpi_fault.c),$(filter probe scan,$(MODULES))),$(FAULT_LIB))
ALL_SRCS := $(foreach m,$(MODULES),$(wildcard bench/$(m)/*.c))
ifneq ($(HAVE_NCCL),1)
  ALL_SRCS := $(filter-out %_nccl.c,$(ALL_SRCS))
endif
ifneq ($(HAVE_CUDA),1)
  ALL_SRCS := $(filter-out %_cuda.c,$(ALL_SRCS))
endif
ifneq ($(HAVE_OFI),1)
  ALL_SRCS := $(filter-out %_ofi.c,$(ALL_SRCS))
endif
CU_SRCS   := $(if $(filter 1,$(HAVE_KERNELS)),$(foreach m,$(MODULES),$(wildcard bench/$(m)/*.cu)))
MAIN_SRCS := $(filter %_main.c,$(ALL_SRCS))
LIB_SRCS  := $(filter-out %_main.c,$(ALL_SRCS)) $(CU_SRCS)
OBJ = $(patsubst %.cu,$(BUILD)/obj/%.o,$(patsubst %.c,$(BUILD)/obj/%.o,$(1)))
# The module a source belongs to: bench/<m>/x.c, tests/unit/test_<m>[_x].c
module_of = $(if $(filter bench/%,$(1)),$(word 2,$(subst /, ,$(1))),$(firstword $(subst _, ,$(patsubst test_%,%,$(basename $(notdir $(1)))))))
# Libraries of a module, its own first, in link order.
link_libs = $(foreach m,$(1) $(call uses,$(1)),$(BUILD)/lib$(m).a)

LIBS := $(foreach m,$(MODULES),$(BUILD)/lib$(m).a)
BINS := $(foreach s,$(MAIN_SRCS),$(BUILD)/bin/fabric-$(patsubst %_main.c,%,$(notdir $(s))))
# Unit tests are named after their module: tests/unit/test_<module>[_x].c
TEST_SRCS := $(foreach m,$(MODULES),$(wildcard tests/unit/test_$(m).c tests/unit/test_$(m)_*.c))
TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
# nccl-tests names, links to fabric-coll (which reads its argv[0]), one per
# row of the collective table.
PERF_NAMES := $(shell sed -n '/= {FB_/s/.*"\([a-z0-9_]*\)_perf".*/\1/p' bench/nccl/collective.c)
PERF_LINKS := $(if $(filter %/coll_main.c,$(MAIN_SRCS)),$(foreach n,$(PERF_NAMES),$(BUILD)/bin/$(n)_perf))

DEPS_STAMP := $(BUILD)/.deps-ok

.PHONY: all deps demo test bench check-asan check-valgrind clean lint help standin standin-rdma
all: $(BINS) $(PERF_LINKS) $(TESTS) $(STANDIN) $(RDMA_STANDIN) $(FAULT)
standin: $(STANDIN) standin-rdma
standin-rdma: $(RDMA_STANDIN)

help:
	@echo "make            build everything (NCCL backend: $(if $(filter 1,$(HAVE_NCCL)),yes,no); GPU validation kernels: $(if $(filter 1,$(HAVE_KERNELS)),yes,no); libfabric: $(if $(filter 1,$(HAVE_OFI)),yes,no))"
	@echo "make demo       host-memory all_reduce sweep on local ranks, verdict and plot"
	@echo "make test       all tests; ends with 'N passed, N failed'"
	@echo "make standin    the CUDA/NCCL stand-in: GPU paths without a GPU (docs/standin.md)$(if $(STANDIN),, - not here: no CUDA/NCCL headers)"
	@echo "make standin-rdma  the libibverbs stand-in: RDMA between local processes (docs/standin.md)$(if $(RDMA_STANDIN),, - not here: no <infiniband/verbs.h>)"
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

# build/inc/<m>/ holds one link per module <m> may include: itself and its
# USES. "report/x.h" from bench/coll is then simply not found.
define module_inc
$(BUILD)/inc/$(1)/.ok: $(wildcard bench/*/module.mk)
	@rm -rf $$(@D) && mkdir -p $$(@D)
	@for d in $(1) $(call uses,$(1)); do ln -s $(CURDIR)/bench/$$$$d $$(@D)/$$$$d; done
	@touch $$@
endef
$(foreach m,$(MODULES),$(eval $(call module_inc,$(m))))

# Object files know their module by their path.
$(BUILD)/obj/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) -I$(BUILD)/inc/$(call module_of,$<) $(CPPFLAGS) $(XCFLAGS) $(CFLAGS) -c -o $@ $<
$(BUILD)/obj/%.o: %.cu | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(NVCC) -ccbin $(NVCC_CCBIN) -std=c++17 -I$(BUILD)/inc/$(call module_of,$<) -D_GNU_SOURCE -DHAVE_CUDA=1 -MMD -MP \
	  $(NVCCFLAGS) -Xcompiler -Wall,-Wextra,-Werror,-fno-exceptions $(NVCC_GENCODE) -c -o $@ $<
$(foreach s,$(ALL_SRCS) $(CU_SRCS) $(TEST_SRCS),$(eval $(call OBJ,$(s)): $(BUILD)/inc/$(call module_of,$(s))/.ok))

LINK = $(CC) $(LDFLAGS) -o $@ $< $(call link_libs,$(1)) $(LDLIBS)

define bin_rule
$(BUILD)/bin/fabric-$(1): $(call OBJ,$(2)) $(call link_libs,$(3))
	@mkdir -p $$(@D)
	$$(call LINK,$(3))
endef
$(foreach s,$(MAIN_SRCS),$(eval $(call bin_rule,$(patsubst %_main.c,%,$(notdir $(s))),$(s),$(call module_of,$(s)))))

$(PERF_LINKS): $(BUILD)/bin/fabric-coll
	ln -sf fabric-coll $@

define test_rule
$(BUILD)/tests/$(1): $(BUILD)/obj/tests/unit/$(1).o $(call link_libs,$(2))
	@mkdir -p $$(@D)
	$$(call LINK,$(2))
endef
$(foreach s,$(TEST_SRCS),$(eval $(call test_rule,$(basename $(notdir $(s))),$(call module_of,$(s)))))

# cudart symbols carry the version node of the real library
# (cudaMalloc@libcudart.so.13), NCCL's none, as the programs expect.
# Its kernel twins run the validation kernels' own per-element code.
STANDIN_KERNEL_HDRS := bench/coll/validate_kernels.h $(wildcard bench/nccl/*.h)
$(STANDIN_CUDART): $(filter tests/standin/cudart%.c tests/standin/common.c,$(STANDIN_SRCS)) $(wildcard tests/standin/*.h) $(STANDIN_KERNEL_HDRS)
	@mkdir -p $(@D)
	@printf '%s {\n  global: cuda*; __cuda*;\n  local: *;\n};\n' $(@F) >$(@D)/cudart.map
	$(STANDIN_LINK) -Wl,--version-script=$(@D)/cudart.map $(filter %.c,$^) -lm

$(STANDIN_DIR)/libnccl.so.2: $(filter tests/standin/nccl%.c tests/standin/common.c,$(STANDIN_SRCS)) $(wildcard tests/standin/*.h) $(STANDIN_CUDART)
	@mkdir -p $(@D)
	@printf '{\n  global: nccl*;\n  local: *;\n};\n' >$(@D)/nccl.map
	$(STANDIN_LINK) -Wl,--version-script=$(@D)/nccl.map $(filter %.c,$^) -L$(@D) -l:$(notdir $(STANDIN_CUDART))

# The driver API's dma-buf export (fabric-rdma --use-cuda dlopens
# libcuda.so.1); the real library's cu* symbols are unversioned.
$(STANDIN_DIR)/libcuda.so.1: tests/standin/cuda_driver.c tests/standin/common.c tests/standin/common.h $(STANDIN_CUDART)
	@mkdir -p $(@D)
	@printf '{\n  global: cu*;\n  local: *;\n};\n' >$(@D)/cuda.map
	$(STANDIN_LINK) -Wl,--version-script=$(@D)/cuda.map $(filter %.c,$^) -L$(@D) -l:$(notdir $(STANDIN_CUDART))

# Each stand-in library exports its symbols in the real library's version
# nodes (its .map), so unmodified programs bind to it.
$(RDMA_STANDIN_DIR)/libibverbs.so.1: $(wildcard tests/standin/ibv_*.c) tests/standin/libibverbs.map tests/standin/ibv_internal.h
	@mkdir -p $(@D)
	$(RDMA_STANDIN_LINK) -lm
$(RDMA_STANDIN_DIR)/libmlx5.so.1: tests/standin/mlx5dv.c tests/standin/libmlx5.map
	@mkdir -p $(@D)
	$(RDMA_STANDIN_LINK)
$(RDMA_STANDIN_DIR)/libefa.so.1: tests/standin/efadv.c tests/standin/libefa.map
	@mkdir -p $(@D)
	$(RDMA_STANDIN_LINK)
$(RDMA_STANDIN_DIR)/librdmacm.so.1: tests/standin/rdmacm.c tests/standin/librdmacm.map
	@mkdir -p $(@D)
	$(RDMA_STANDIN_LINK)

$(FAULT_LIB): tests/tools/mpi_fault.c
	@mkdir -p $(@D)
	$(CC) $(PRELOAD_FLAGS) -shared -Wl,-z,defs -o $@ $<

demo: all
	scripts/demo.sh

test: all
	BUILD=$(BUILD) tests/run

bench: all
	scripts/bench.sh

lint:
	tests/run test_shellcheck

clean:
	rm -rf $(BUILD) $(BUILD)-*

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
