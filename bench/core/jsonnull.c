#include "core/jsonnull.h"

json_object *fb_json_int_or_null(int v)
{
    return v >= 0 ? json_object_new_int(v) : NULL;
}

json_object *fb_json_string_or_null(const char *s)
{
    return s != NULL && s[0] != '\0' ? json_object_new_string(s) : NULL;
}
