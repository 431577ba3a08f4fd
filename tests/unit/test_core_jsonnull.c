/* Unknown facts are JSON null: negative ints and empty strings. */
#include <json-c/json.h>

#include "check.h"
#include "core/jsonio.h"

static void negative_int_is_null(void)
{
    CHECK(fb_json_int_or_null(-1) == NULL);
    CHECK(fb_json_int_or_null(-42) == NULL);
    json_object *zero = fb_json_int_or_null(0), *seven = fb_json_int_or_null(7);
    CHECK(json_object_is_type(zero, json_type_int));
    CHECK_INT(json_object_get_int(zero), 0);
    CHECK_INT(json_object_get_int(seven), 7);
    json_object_put(zero);
    json_object_put(seven);
}

static void empty_string_is_null(void)
{
    CHECK(fb_json_string_or_null(NULL) == NULL);
    CHECK(fb_json_string_or_null("") == NULL);
    json_object *s = fb_json_string_or_null("mlx5_0");
    CHECK(json_object_is_type(s, json_type_string));
    CHECK_STR(json_object_get_string(s), "mlx5_0");
    json_object_put(s);
}

static void nulls_serialise_as_null_members(void)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "numa", fb_json_int_or_null(-1));
    json_object_object_add(o, "rdma", fb_json_string_or_null(""));
    json_object_object_add(o, "package", fb_json_int_or_null(1));
    CHECK_STR(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
              "{\"numa\":null,\"rdma\":null,\"package\":1}");
    json_object_put(o);
}

int main(void)
{
    RUN(negative_int_is_null);
    RUN(empty_string_is_null);
    RUN(nulls_serialise_as_null_members);
    return fbt_done();
}
