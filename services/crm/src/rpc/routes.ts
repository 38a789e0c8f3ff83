import type { ConnectRouter } from "@connectrpc/connect";
import type { Clock } from "@funil/config";
import { ContactService, CustomFieldService, MemberService } from "@funil/contracts";
import type { ContactStore } from "../store/contacts.js";
import type { CustomFieldStore } from "../store/custom-fields.js";
import type { MemberStore } from "../store/members.js";
import { contactService } from "./contacts.js";
import { customFieldService, memberService } from "./workspace.js";

export interface CrmDeps {
  contacts: ContactStore;
  customFields: CustomFieldStore;
  members: MemberStore;
  clock: Clock;
}

export function routes(deps: CrmDeps) {
  return (router: ConnectRouter) => {
    router.service(ContactService, contactService(deps));
    router.service(CustomFieldService, customFieldService(deps));
    router.service(MemberService, memberService(deps));
  };
}
