scan_USES := nccl core
