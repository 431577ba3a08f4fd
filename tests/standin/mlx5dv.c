/* libmlx5 stand-in: the mlx5 direct-verbs entry points perftest links,
 * answering as a device without those features would (NULL with errno
 * EOPNOTSUPP, or EOPNOTSUPP), so a program that tries them falls back or
 * reports that the feature is missing. Versions as the real library's. */
#include <errno.h>
#include <stdbool.h>

#include <infiniband/mlx5dv.h>

bool mlx5dv_is_supported(struct ibv_device *device)
{
    (void)device;
    return false;
}

struct ibv_context *mlx5dv_open_device(struct ibv_device *device, struct mlx5dv_context_attr *attr)
{
    (void)device;
    (void)attr;
    errno = EOPNOTSUPP;
    return NULL;
}

int mlx5dv_query_device(struct ibv_context *ctx_in, struct mlx5dv_context *attrs_out)
{
    (void)ctx_in;
    (void)attrs_out;
    return EOPNOTSUPP;
}

int mlx5dv_init_obj(struct mlx5dv_obj *obj, uint64_t obj_type)
{
    (void)obj;
    (void)obj_type;
    return EOPNOTSUPP;
}

struct ibv_qp *mlx5dv_create_qp(struct ibv_context *context, struct ibv_qp_init_attr_ex *qp_attr,
                                struct mlx5dv_qp_init_attr *mlx5_qp_attr)
{
    (void)context;
    (void)qp_attr;
    (void)mlx5_qp_attr;
    errno = EOPNOTSUPP;
    return NULL;
}

struct mlx5dv_qp_ex *mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qp)
{
    (void)qp;
    errno = EOPNOTSUPP;
    return NULL;
}

int mlx5dv_devx_general_cmd(struct ibv_context *context, const void *in, size_t inlen, void *out,
                            size_t outlen)
{
    (void)context;
    (void)in;
    (void)inlen;
    (void)out;
    (void)outlen;
    errno = EOPNOTSUPP;
    return EOPNOTSUPP;
}

struct mlx5dv_mkey *mlx5dv_create_mkey(struct mlx5dv_mkey_init_attr *mkey_init_attr)
{
    (void)mkey_init_attr;
    errno = EOPNOTSUPP;
    return NULL;
}

int mlx5dv_destroy_mkey(struct mlx5dv_mkey *mkey)
{
    (void)mkey;
    return EOPNOTSUPP;
}

int mlx5dv_crypto_login(struct ibv_context *context, struct mlx5dv_crypto_login_attr *login_attr)
{
    (void)context;
    (void)login_attr;
    return EOPNOTSUPP;
}

struct mlx5dv_dek *mlx5dv_dek_create(struct ibv_context *context, struct mlx5dv_dek_init_attr *init_attr)
{
    (void)context;
    (void)init_attr;
    errno = EOPNOTSUPP;
    return NULL;
}

int mlx5dv_dek_destroy(struct mlx5dv_dek *dek)
{
    (void)dek;
    return EOPNOTSUPP;
}
