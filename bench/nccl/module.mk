nccl_USES := core
