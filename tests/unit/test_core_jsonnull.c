/* Unknown facts are JSON null: negative ints and empty strings. And what
 * json-c would read as something the text does not say is refused: a
 * string cut at \u0000, a number past a double's range, an integer past
 * 64 bits. */
#include <json-c/json.h>
#include <string.h>

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

/* Parses `text`; returns the status, the message in *err. */
static enum fb_status parse(const char *text, struct fb_err *err)
{
    json_object *doc = NULL;
    struct fb_json_syntax why;
    fb_err_clear(err);
    enum fb_status st = fb_json_parse_text("t.json", text, strlen(text), &doc, &why, err);
    json_object_put(doc);
    return st;
}

static void nul_inside_a_string_is_refused(void)
{
    struct fb_err err = {0};
    CHECK_INT(parse("{\"host\": \"node-a\\u0000evil\"}", &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "t.json, line 1: \\u0000 (NUL) would cut the string short");
    CHECK_INT(parse("{\"k\\u0000\": 1}", &err), FB_ERR_INPUT);
    /* An escaped backslash before "u0000" is text, not a NUL. */
    CHECK_INT(parse("{\"path\": \"C:\\\\u0000\", \"s\": \"\\u0001\"}", &err), FB_OK);
}

static void numbers_json_c_would_change_are_refused(void)
{
    struct fb_err err = {0};
    CHECK_INT(parse("{\"busbw\": 1e309}", &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "a number beyond the range of a double: \"1e309\"");
    CHECK_INT(parse("{\"bytes\": 100000000000000000000}", &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "an integer beyond 64 bits: \"100000000000000000000\"");
    CHECK_INT(parse("{\"x\": -9223372036854775809}", &err), FB_ERR_INPUT);
    /* The largest of each still read as written. */
    CHECK_INT(parse("{\"a\": 1.7e308, \"b\": 18446744073709551615, \"c\": -9223372036854775808, \"d\": 4.9e-324}", &err), FB_OK);
}

static void a_quoted_key_never_carries_control_characters(void)
{
    struct fb_err err = {0};
    CHECK_INT(parse("{\"a\x1b[2J\": 1, \"a\x1b[2J\": 2}", &err), FB_ERR_INPUT);
    CHECK_CONTAINS(err.msg, "duplicate key \"a\\x1b[2J\"");
    CHECK(strchr(err.msg, 0x1b) == NULL);
}

int main(void)
{
    RUN(nul_inside_a_string_is_refused);
    RUN(numbers_json_c_would_change_are_refused);
    RUN(a_quoted_key_never_carries_control_characters);
    RUN(negative_int_is_null);
    RUN(empty_string_is_null);
    RUN(nulls_serialise_as_null_members);
    return fbt_done();
}
