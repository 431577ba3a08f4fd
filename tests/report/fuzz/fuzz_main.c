/* libFuzzer entry: tests/report/fuzz.sh builds one binary per target with
 * -DFUZZ_TARGET=<function of targets.c>. */
#include "targets.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return FUZZ_TARGET(data, size);
}
