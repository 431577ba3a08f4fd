coll_USES := nccl core
