#ifndef FB_CORE_VERSION_H
#define FB_CORE_VERSION_H
#define FB_VERSION "0.1.0"
#define FB_SCHEMA_NAME "fabric-bench.result"
#define FB_SCHEMA_VERSION 1
#endif
