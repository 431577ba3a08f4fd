/* nccl-tests' own -J document (JSON file version 3, the layout of
 * nccl-tests 2.19.6), as a view of fabric-coll's results record: the same
 * keys in the same order with the same types (booleans as the strings
 * "true"/"false", the root as a padded string, numbers printed with six
 * decimals, NaN as "nan"), so tools written for nccl-tests' JSON read it.
 * Built from the record alone, it can be written after every size like the
 * record, or made later from a record file. docs/results-schema.md lists
 * the keys. */
#ifndef FB_COLL_NTJSON_H
#define FB_COLL_NTJSON_H

#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

/* nccl-tests' JSON_FILE_VERSION in 2.19.6. */
#define FB_NTJSON_VERSION 3

/* The variables the view lists in "env": NCCL_*, FI_*, UCX_* and the
 * launcher's (OMPI_*, PMIX_*, SLURM_*, PMI_*, ...), never the whole
 * environment, which holds secrets. */
bool fb_ntjson_env_keep(const char *name);

/* The nccl-tests document for a record (docs/results-schema.md, kind
 * "collective"). `live_env`: also list this process's variables that
 * fb_ntjson_env_keep keeps (the record keeps fewer); false for a record
 * read from a file. A record that is not complete gets no footer keys
 * (out_of_bounds, average_bus_bandwidth, end_time): a reader tells it from
 * a finished run as it would tell nccl-tests' file of a killed run. */
json_object *fb_ntjson_from_record(json_object *record, bool live_env);

/* nccl-tests 2.19.6 writes -J's file only when the name's extension is
 * .json (any case). */
bool fb_ntjson_name_is_json(const char *path);

struct fb_ntjson_file {
    bool active;
    char path[PATH_MAX]; /* the name taken */
};

/* Creates the file as nccl-tests does: `requested` when it does not exist
 * yet, else the first free of REQUESTED.0, REQUESTED.1, ... (never over an
 * existing file, no directories made); any other failure skips the JSON
 * output and the run goes on. `line` gets the line nccl-tests prints
 * ("# Writing JSON output to NAME" or "# skipping json output; NAME not
 * accessible"). The first version (the record's view) is written into it. */
void fb_ntjson_open(struct fb_ntjson_file *f, const char *requested, json_object *record, char *line,
                    size_t len);

/* Replaces the file's text with the record's current view, atomically. */
enum fb_status fb_ntjson_save(const struct fb_ntjson_file *f, json_object *record, struct fb_err *err);

/* The view's text: compact, as nccl-tests writes it. Free it. */
char *fb_ntjson_text(json_object *record, bool live_env);

#endif
