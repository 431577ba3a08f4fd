report_USES := nccl core
